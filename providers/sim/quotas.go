// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Unlimited is the limit of a quota nothing limits: more than any test or
// demo runs.
const Unlimited = 1 << 20

// QuotaBase names the limits a QuotaSet starts from.
type QuotaBase string

const (
	// NewAccount is the limits a new account, project or subscription has
	// before anyone asks for more: no P-class, Trn, DL or F vCPUs on AWS
	// and a few G ones; ten regional vCPUs and no GPU family vCPUs on
	// Azure; eight GPUs in all and four L4s a region on GCP.
	NewAccount QuotaBase = "new-account"
	// NoLimits is every quota at Unlimited: an account whose quotas are
	// out of the way.
	NoLimits QuotaBase = "unlimited"
)

// QuotaSet declares a world's quota limits: a base, and limits that
// replace it. It is the form of `sim serve --quotas FILE`.
type QuotaSet struct {
	// Base is where limits start; "" is NewAccount.
	Base   QuotaBase    `json:"base,omitempty"`
	Quotas []QuotaLimit `json:"quotas,omitempty"`
}

// QuotaLimit is one quota's limit, in the quota's unit (catalog.Quota).
type QuotaLimit struct {
	Cloud string `json:"cloud"`
	// Region is where a regional quota has this limit; "" is every region,
	// and the only region a global quota has.
	Region string `json:"region,omitempty"`
	Name   string `json:"name"`
	Limit  int    `json:"limit"`
}

// newAccountLimits are NewAccount's limits by cloud and quota name, in
// every region; a quota not named here has none.
var newAccountLimits = map[quotaKey]int{
	{catalog.AWS, "", "L-DB2E81BA"}:                 8, // Running On-Demand G and VT instances
	{catalog.AWS, "", "L-3819A6DF"}:                 8, // All G and VT Spot Instance Requests
	{catalog.AWS, "", "L-1945791B"}:                 8, // Running On-Demand Inf instances
	{catalog.AWS, "", "L-B5D1601B"}:                 8, // All Inf Spot Instance Requests
	{catalog.Azure, "", "cores"}:                    10,
	{catalog.Azure, "", "lowPriorityCores"}:         10,
	{catalog.GCP, "", "GPUS_ALL_REGIONS"}:           8,
	{catalog.GCP, "", "NVIDIA_L4_GPUS"}:             4,
	{catalog.GCP, "", "PREEMPTIBLE_NVIDIA_L4_GPUS"}: 4,
}

// validate checks a quota set names quotas the catalog has, in regions it
// has, and that no quota is given two limits.
func (s QuotaSet) validate(cat *catalog.Catalog) error {
	switch s.Base {
	case "", NewAccount, NoLimits:
	default:
		return fmt.Errorf("base %q: want %q or %q", s.Base, NewAccount, NoLimits)
	}
	seen := map[quotaKey]int{}
	for i, l := range s.Quotas {
		q, ok := cat.QuotaNamed(l.Cloud, l.Name)
		if !ok {
			return fmt.Errorf("quotas[%d]: %s has no quota %q", i, l.Cloud, l.Name)
		}
		if l.Region != "" {
			if q.Scope == catalog.GlobalScope {
				return fmt.Errorf("quotas[%d]: %s is global, so it has no region %q", i, l.Name, l.Region)
			}
			if _, ok := cat.Region(l.Cloud, l.Region); !ok {
				return fmt.Errorf("quotas[%d]: %s has no region %q", i, l.Cloud, l.Region)
			}
		}
		if l.Limit < 0 {
			return fmt.Errorf("quotas[%d]: limit %d of %s is negative", i, l.Limit, l.Name)
		}
		k := quotaKey{l.Cloud, l.Region, l.Name}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("quotas[%d]: repeats quotas[%d]", i, j)
		}
		seen[k] = i
	}
	return nil
}

// SetQuotas replaces every quota limit the world has with the set's: what
// `sim serve --quotas` declares on every start. SetQuota changes one
// afterwards.
func (w *World) SetQuotas(s QuotaSet) error {
	if err := s.validate(w.cat); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.quotaNames = map[quotaKey]int{}
	w.quotaBase = cmp.Or(s.Base, NewAccount)
	if w.quotaBase == NewAccount {
		for _, q := range w.cat.Quotas {
			w.quotaNames[quotaKey{q.Cloud, "", q.Name}] = newAccountLimits[quotaKey{q.Cloud, "", q.Name}]
		}
	}
	w.quota = map[quotaKey]int{}
	for _, l := range s.Quotas {
		k := quotaKey{l.Cloud, l.Region, l.Name}
		if l.Region == "" {
			w.quotaNames[k] = l.Limit
		} else {
			w.quota[k] = l.Limit
		}
	}
	w.changed()
	return nil
}

// LoadQuotas reads a quota file, the JSON form of QuotaSet, checking it
// against the catalog the world is built from.
func LoadQuotas(path string, cat *catalog.Catalog) (QuotaSet, error) {
	var s QuotaSet
	if err := decodeFile(path, &s); err != nil {
		return QuotaSet{}, err
	}
	if cat == nil {
		cat = catalog.Default()
	}
	if err := s.validate(cat); err != nil {
		return QuotaSet{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// quotaOf is a quota's limit in a region (Region "" for a global one):
// the region's own, else the one every region has, else Config.Quota.
func (w *World) quotaOf(k quotaKey) int {
	if n, ok := w.quota[k]; ok {
		return n
	}
	if n, ok := w.quotaNames[quotaKey{k.Cloud, "", k.Name}]; ok {
		return n
	}
	return w.cfg.Quota
}

// sortedQuotaNames lists the limits every region has, for the state file.
func (w *World) sortedQuotaNames() []quotaEntry {
	out := make([]quotaEntry, 0, len(w.quotaNames))
	for _, k := range slices.SortedFunc(maps.Keys(w.quotaNames), func(a, b quotaKey) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Name, b.Name))
	}) {
		out = append(out, quotaEntry{k, w.quotaNames[k]})
	}
	return out
}

// QuotasDeclared reports whether the world's quota limits were declared
// with SetQuotas, now or in the state it was loaded from.
func (w *World) QuotasDeclared() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quotaBase != ""
}
