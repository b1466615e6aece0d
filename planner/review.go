// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Review compares the plan of a pull request's head with the plan of its
// base: what merging would change, in actions and in dollars per hour.
type Review struct {
	// Head is the head's plan and the actions it takes from what runs;
	// nil when the head's specs do not load.
	Head *Report `json:"head,omitempty"`
	// Base is the base's plan; nil when the base's specs do not load.
	Base *Plan `json:"base,omitempty"`
	// HeadErrors and BaseErrors are spec errors, as file:line:column:
	// path: message.
	HeadErrors []string `json:"headErrors,omitempty"`
	BaseErrors []string `json:"baseErrors,omitempty"`
	// BaseCommit and HeadCommit are the commits compared, when known.
	BaseCommit string `json:"baseCommit,omitempty"`
	HeadCommit string `json:"headCommit,omitempty"`
	// Changes per workload between base and head; empty when the head's
	// specs do not load, for then nothing is known of the head.
	Changes []WorkloadChange `json:"changes"`
	// BeforeMicros and AfterMicros are $/h of the base and the head.
	BeforeMicros int64    `json:"beforeMicros"`
	AfterMicros  int64    `json:"afterMicros"`
	DeltaMicros  int64    `json:"deltaMicros"`
	Warnings     []string `json:"warnings,omitempty"`
}

// WorkloadChange is how one workload's placement differs between base and
// head.
type WorkloadChange struct {
	Fleet        string     `json:"fleet"`
	Workload     string     `json:"workload"`
	Kind         ChangeKind `json:"kind"`
	BeforeNodes  int        `json:"beforeNodes"`
	AfterNodes   int        `json:"afterNodes"`
	BeforeMicros int64      `json:"beforeMicros"`
	AfterMicros  int64      `json:"afterMicros"`
	// Moves lists placement counts that differ, per offer.
	Moves []Move `json:"moves,omitempty"`
}

// ChangeKind says how a workload changes between base and head.
type ChangeKind string

const (
	ChangeAdded   ChangeKind = "added"
	ChangeRemoved ChangeKind = "removed"
	ChangeChanged ChangeKind = "changed"
)

// Move is how many more nodes (fewer when negative) the head places on an
// offer than the base. In JSON it is a string, "+2 gcp/us-central1/…".
type Move struct {
	Offer OfferKey `json:"offer"`
	Nodes int      `json:"nodes"`
}

func (m Move) String() string { return fmt.Sprintf("%+d %s", m.Nodes, m.Offer) }

// MarshalText writes a move as String does.
func (m Move) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a move as MarshalText writes it.
func (m *Move) UnmarshalText(b []byte) error {
	n, offer, ok := strings.Cut(string(b), " ")
	if !ok {
		return fmt.Errorf("move %q: want \"+N offer\"", b)
	}
	nodes, err := strconv.Atoi(n)
	if err != nil {
		return fmt.Errorf("move %q: %w", b, err)
	}
	k, err := ParseOfferKey(offer)
	if err != nil {
		return fmt.Errorf("move %q: %w", b, err)
	}
	*m = Move{Offer: k, Nodes: nodes}
	return nil
}

// NewReview compares a head report with a base plan.
func NewReview(head *Report, base *Plan, headErrors, baseErrors []string) *Review {
	r := &Review{Head: head, Base: base, HeadErrors: headErrors, BaseErrors: baseErrors, Changes: []WorkloadChange{}}
	if base != nil {
		r.BeforeMicros = base.CostMicros
	} else if head != nil {
		r.BeforeMicros = head.CurrentMicros
	}
	if head != nil {
		r.AfterMicros = head.Plan.CostMicros
		r.Warnings = append(r.Warnings, head.Plan.Warnings...)
		if head.Changes.Refusal != "" {
			r.Warnings = append(r.Warnings, head.Changes.Refusal)
		}
		if _, deletes := head.Changes.DeferredCounts(); deletes > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d deletions wait for later runs, with the creates that replace them: %s", deletes, head.Changes.Deferral))
		}
	} else {
		r.AfterMicros = r.BeforeMicros
	}
	r.DeltaMicros = r.AfterMicros - r.BeforeMicros
	if len(baseErrors) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the base's specs do not load (%d errors): costs compare with what runs now", len(baseErrors)))
	}
	if head != nil {
		r.Changes = compareWorkloads(base, head)
	}
	return r
}

func compareWorkloads(base *Plan, head *Report) []WorkloadChange {
	type key struct{ fleet, workload string }
	before, after := map[key]WorkloadPlan{}, map[key]WorkloadPlan{}
	if base != nil {
		for _, f := range base.Fleets {
			for _, w := range f.Workloads {
				before[key{f.Name, w.Name}] = w
			}
		}
	}
	if head != nil {
		for _, f := range head.Plan.Fleets {
			for _, w := range f.Workloads {
				after[key{f.Name, w.Name}] = w
			}
		}
	}
	keys := slices.Collect(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.fleet, b.fleet), cmp.Compare(a.workload, b.workload)) })
	var out []WorkloadChange
	for _, k := range keys {
		b, inBase := before[k]
		a, inHead := after[k]
		c := WorkloadChange{Fleet: k.fleet, Workload: k.workload, BeforeNodes: b.Placed, AfterNodes: a.Placed, BeforeMicros: b.CostMicros, AfterMicros: a.CostMicros}
		switch {
		case !inBase:
			c.Kind = ChangeAdded
		case !inHead:
			c.Kind = ChangeRemoved
		default:
			c.Kind = ChangeChanged
		}
		counts := map[OfferKey]int{}
		for _, p := range b.Placements {
			counts[p.Offer] -= p.Count
		}
		for _, p := range a.Placements {
			counts[p.Offer] += p.Count
		}
		for _, o := range slices.SortedFunc(maps.Keys(counts), OfferKey.Compare) {
			if n := counts[o]; n != 0 {
				c.Moves = append(c.Moves, Move{Offer: o, Nodes: n})
			}
		}
		if c.Kind == ChangeChanged && len(c.Moves) == 0 && c.BeforeMicros == c.AfterMicros {
			continue
		}
		out = append(out, c)
	}
	if out == nil {
		out = []WorkloadChange{}
	}
	return out
}
