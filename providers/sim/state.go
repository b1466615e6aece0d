// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// stateVersion is the format of the state file; a file of another version
// is refused rather than misread.
const stateVersion = 2

type stateFile struct {
	Version    int                   `json:"version"`
	Seq        uint64                `json:"seq"`
	Random     []byte                `json:"random"`
	Instances  []*Instance           `json:"instances"`
	Tokens     map[string]tokenEntry `json:"tokens"`
	Operations []*Operation          `json:"operations"`
	Capacity   []capacityEntry       `json:"capacity,omitempty"`
	Quota      []quotaEntry          `json:"quota,omitempty"`
	// QuotaBase, QuotaNames and Account, like Resources, are absent from older files.
	QuotaBase  QuotaBase      `json:"quotaBase,omitempty"`
	QuotaNames []quotaEntry   `json:"quotaNames,omitempty"`
	Account    *Account       `json:"account,omitempty"`
	Unoffered  []offeringKey  `json:"unoffered,omitempty"`
	Faults     []*Fault       `json:"faults,omitempty"`
	Calls      map[string]int `json:"calls,omitempty"`
	// A version 2 file written before rate limits existed lacks the two
	// fields below and loads as having none. Buckets are not kept: a
	// restart starts them full, which lets callers through at most one
	// burst more than the cloud would.
	RateLimits []RateLimit    `json:"rateLimits,omitempty"`
	Throttled  map[string]int `json:"throttled,omitempty"`
	// Resources and Latency, likewise, are absent from older files.
	Resources []*Resource `json:"resources,omitempty"`
	Latency   *Latency    `json:"latency,omitempty"`
}

type capacityEntry struct {
	capacityKey
	Count int `json:"count"`
}

type quotaEntry struct {
	quotaKey
	Limit int `json:"limit"`
}

func (w *World) load(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("reading emulator state %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("emulator state %s has version %d, want %d", path, st.Version, stateVersion)
	}
	if err := w.pcg.UnmarshalBinary(st.Random); err != nil {
		return fmt.Errorf("emulator state %s: random source: %w", path, err)
	}
	w.seq = st.Seq
	for _, inst := range st.Instances {
		if inst.Tags == nil {
			inst.Tags = map[string]string{}
		}
		w.put(inst)
	}
	if st.Tokens != nil {
		w.tokens = st.Tokens
	}
	for _, op := range st.Operations {
		w.operations[op.ID] = op
		w.settleSoon(op.DoneAt)
	}
	for _, c := range st.Capacity {
		w.capacity[c.capacityKey] = c.Count
	}
	for _, q := range st.Quota {
		w.quota[q.quotaKey] = q.Limit
	}
	w.quotaBase = st.QuotaBase
	for _, q := range st.QuotaNames {
		w.quotaNames[q.quotaKey] = q.Limit
	}
	if st.Account != nil {
		if err := st.Account.validate(); err != nil {
			return fmt.Errorf("emulator state %s: account: %w", path, err)
		}
		w.account = *st.Account
	}
	for _, k := range st.Unoffered {
		w.unoffered[k] = true
	}
	w.faults = st.Faults
	if st.Calls != nil {
		w.calls = st.Calls
	}
	if err := validateRateLimits(st.RateLimits); err != nil {
		return fmt.Errorf("emulator state %s: %w", path, err)
	}
	w.rateLimits = st.RateLimits
	if st.Throttled != nil {
		w.throttled = st.Throttled
	}
	for _, r := range st.Resources {
		w.resources[resourceKey{r.Cloud, r.Kind, r.ID}] = r
	}
	if st.Latency != nil && !w.latencySet {
		w.applyLatency(*st.Latency)
	}
	return nil
}

func (w *World) marshal() ([]byte, error) {
	random, err := w.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	st := stateFile{Version: stateVersion, Seq: w.seq, Random: random, Tokens: w.tokens, Faults: w.faults, Calls: w.calls,
		RateLimits: w.rateLimits, Throttled: w.throttled, Resources: w.sortedResources(), QuotaBase: w.quotaBase, QuotaNames: w.sortedQuotaNames()}
	if !w.account.empty() {
		a := w.account.clone()
		st.Account = &a
	}
	if l := w.latency(); l != (Latency{}) {
		st.Latency = &l
	}
	for _, inst := range w.instances {
		st.Instances = append(st.Instances, inst)
	}
	slices.SortFunc(st.Instances, func(a, b *Instance) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, op := range w.operations {
		st.Operations = append(st.Operations, op)
	}
	slices.SortFunc(st.Operations, func(a, b *Operation) int { return cmp.Compare(a.ID, b.ID) })
	for k, n := range w.capacity {
		st.Capacity = append(st.Capacity, capacityEntry{k, n})
	}
	slices.SortFunc(st.Capacity, func(a, b capacityEntry) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.Market, b.Market))
	})
	for k, n := range w.quota {
		st.Quota = append(st.Quota, quotaEntry{k, n})
	}
	slices.SortFunc(st.Quota, func(a, b quotaEntry) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Region, b.Region), cmp.Compare(a.Name, b.Name))
	})
	for k := range w.unoffered {
		st.Unoffered = append(st.Unoffered, k)
	}
	slices.SortFunc(st.Unoffered, func(a, b offeringKey) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.InstanceType, b.InstanceType))
	})
	return json.Marshal(st)
}
