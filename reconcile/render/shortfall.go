// SPDX-License-Identifier: Apache-2.0

package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// maxFleetsNamed bounds the fleets a shortfall headline names; the rest
// are counted.
const maxFleetsNamed = 3

// shortfall is what a headline says of the nodes that cannot be placed:
// a missing node is news however calm the rest of a plan or a status is.
type shortfall struct {
	// desired is how many nodes the fleets counted ask for.
	desired   int
	workloads []shortWorkload
	// blocks are, by fleet, the blocklist entries that bear on its
	// offers: when each offer takes new nodes again.
	blocks map[string]map[string]time.Time
}

// shortWorkload is a workload with fewer nodes placed than it asks for.
type shortWorkload struct {
	fleet   string
	nodes   int
	cause   planner.ShortfallCause
	message string
	// blocklisted says offers that could serve it were rejected for the
	// blocklist.
	blocklisted bool
}

// reportShortfall is what a plan leaves unplaced, leaving out suspended
// fleets: nothing is applied to them, so what they lack is expected.
func reportShortfall(r *planner.Report) shortfall {
	s := shortfall{blocks: map[string]map[string]time.Time{}}
	for _, f := range r.Plan.Fleets {
		if slices.Contains(r.Suspended, f.Name) {
			continue
		}
		for _, wl := range f.Workloads {
			s.desired += wl.Desired
			if wl.Placed >= wl.Desired {
				continue
			}
			w := shortWorkload{fleet: f.Name, nodes: wl.Desired - wl.Placed, blocklisted: wl.Rejected[planner.RejectBlocklisted] > 0}
			if sf := wl.Shortfall; sf != nil {
				w.cause, w.message = sf.Cause, sf.Message
			}
			s.workloads = append(s.workloads, w)
		}
		for _, b := range r.Blocklist[f.Name] {
			s.block(f.Name, b.Offer.String(), b.Until)
		}
	}
	return s
}

// statusShortfall is what the fleets' statuses leave unplaced, by the
// plan they were reconciled to, leaving out suspended fleets.
func statusShortfall(statuses map[string]*status.FleetStatus) shortfall {
	s := shortfall{blocks: map[string]map[string]time.Time{}}
	for _, name := range slices.Sorted(maps.Keys(statuses)) {
		st := statuses[name]
		if suspended(st) {
			continue
		}
		for _, wl := range st.Workloads {
			s.desired += wl.Desired
			placed := 0
			for _, pl := range wl.Placed {
				placed += pl.Count
			}
			if placed >= wl.Desired {
				continue
			}
			w := shortWorkload{fleet: name, nodes: wl.Desired - placed}
			if sf := wl.Shortfall; sf != nil {
				w.cause, w.message = sf.Cause, sf.Message
			}
			s.workloads = append(s.workloads, w)
		}
		for _, b := range st.Blocklist {
			s.block(name, b.Offer, b.Until)
		}
	}
	return s
}

func suspended(st *status.FleetStatus) bool {
	return slices.ContainsFunc(st.Conditions, func(c status.Condition) bool { return c.Type == status.Suspended && c.Status })
}

func (s *shortfall) block(fleet, offer string, until time.Time) {
	if s.blocks[fleet] == nil {
		s.blocks[fleet] = map[string]time.Time{}
	}
	if prev, ok := s.blocks[fleet][offer]; !ok || until.After(prev) {
		s.blocks[fleet][offer] = until
	}
}

// withStatuses is a report with what the run's statuses know of the
// suspended fleets and the blocklist, where the report does not say.
func withStatuses(r *planner.Report, statuses map[string]*status.FleetStatus) *planner.Report {
	if len(statuses) == 0 || r.Suspended != nil && r.Blocklist != nil {
		return r
	}
	out := *r
	var suspend []string
	blocklist := map[string][]planner.BlockedOffer{}
	for _, name := range slices.Sorted(maps.Keys(statuses)) {
		st := statuses[name]
		if suspended(st) {
			suspend = append(suspend, name)
		}
		for _, b := range st.Blocklist {
			if k, err := planner.ParseOfferKey(b.Offer); err == nil {
				blocklist[name] = append(blocklist[name], planner.BlockedOffer{Offer: k, Until: b.Until})
			}
		}
	}
	if out.Suspended == nil {
		out.Suspended = suspend
	}
	if out.Blocklist == nil && len(blocklist) > 0 {
		out.Blocklist = blocklist
	}
	return &out
}

// line is the headline, "Short 12 of 40 nodes — infer 10, train 2
// (capacity: …)", or "" when every node is placed.
func (s shortfall) line() string {
	if p := s.phrase(); p != "" {
		return "S" + p[1:]
	}
	return ""
}

// phrase is the headline in lower case, to follow a title.
func (s shortfall) phrase() string {
	if len(s.workloads) == 0 {
		return ""
	}
	total := 0
	byFleet := map[string]int{}
	for _, w := range s.workloads {
		total += w.nodes
		byFleet[w.fleet] += w.nodes
	}
	fleets := slices.SortedFunc(maps.Keys(byFleet), func(a, b string) int {
		return cmp.Or(cmp.Compare(byFleet[b], byFleet[a]), cmp.Compare(a, b))
	})
	var named []string
	for _, f := range fleets[:min(len(fleets), maxFleetsNamed)] {
		named = append(named, fmt.Sprintf("%s %d", f, byFleet[f]))
	}
	if more := len(fleets) - maxFleetsNamed; more > 0 {
		named = append(named, "and "+count(more, "more fleet"))
	}
	return fmt.Sprintf("short %d of %s — %s (%s)", total, count(s.desired, "node"), strings.Join(named, ", "), s.causes())
}

// causes says why, a group per cause, the most nodes first: with the
// nodes it holds back when there is more than one.
func (s shortfall) causes() string {
	groups := map[planner.ShortfallCause][]shortWorkload{}
	nodes := map[planner.ShortfallCause]int{}
	for _, w := range s.workloads {
		groups[w.cause] = append(groups[w.cause], w)
		nodes[w.cause] += w.nodes
	}
	causes := slices.SortedFunc(maps.Keys(groups), func(a, b planner.ShortfallCause) int {
		return cmp.Or(cmp.Compare(nodes[b], nodes[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, c := range causes {
		part := string(c)
		if c == "" {
			part = "unexplained"
		}
		if len(causes) > 1 {
			part += fmt.Sprintf(" %d", nodes[c])
		}
		if d := s.detail(c, groups[c]); d != "" {
			part += ": " + d
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// detail says what holds a cause's nodes back. Where offers are
// blocklisted that is when they come back, the first and the last; else
// the planner's message, when every workload of the group has the same.
func (s shortfall) detail(c planner.ShortfallCause, ws []shortWorkload) string {
	blocklisted := false
	if c == planner.CauseCapacity || c == planner.CauseNoOffer {
		until := map[string]time.Time{}
		for _, w := range ws {
			blocklisted = blocklisted || w.blocklisted
			for offer, t := range s.blocks[w.fleet] {
				if prev, ok := until[offer]; !ok || t.After(prev) {
					until[offer] = t
				}
			}
		}
		if len(until) > 0 {
			times := slices.SortedFunc(maps.Values(until), time.Time.Compare)
			return fmt.Sprintf("%s blocklisted until %s", count(len(until), "offer"), window(times[0], times[len(times)-1]))
		}
	}
	msg := oneLine(ws[0].message)
	for _, w := range ws[1:] {
		if oneLine(w.message) != msg {
			msg = ""
			break
		}
	}
	if msg == "" && blocklisted {
		return "offers blocklisted"
	}
	return msg
}

// window writes the span from the first expiry to the last in UTC, the
// date once when both fall on the same day.
func window(first, last time.Time) string {
	first, last = first.UTC(), last.UTC()
	const day, minute = "2006-01-02", "15:04 UTC"
	a, b := first.Format(day+" "+minute), last.Format(day+" "+minute)
	switch {
	case a == b:
		return a
	case first.Format(day) == last.Format(day):
		return first.Format(day+" 15:04") + "–" + last.Format(minute)
	}
	return a + " – " + b
}

// count writes n things, in the plural unless n is 1.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
