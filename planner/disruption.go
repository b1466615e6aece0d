// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/schema"
)

// DeletionBudget is what a fleet may lose of its live nodes in one run:
// its disruption budget, resolved to a count.
type DeletionBudget struct {
	// Limit is how many live nodes the run may delete; Spent is how many
	// its earlier rounds deleted, or asked a cloud to, already.
	Limit, Spent int
	// Says how the limit came about, for Changes.Deferral, e.g.
	// "defaults.disruption.budget 10% of fleet train's 576 live nodes: 58
	// per run".
	Says string
	// RefuseOver, when set, is the circuit breaker: a change deleting more
	// live nodes of the fleet than this is refused whole. RefuseField
	// says where it is set.
	RefuseOver  *int
	RefuseField string
}

// Budgets resolves the disruption budget of every fleet, of the specs or
// only observed, against its live nodes in observed. A fleet of the specs
// has its own defaults; one removed from the repository, gpufleet's. A run
// resolves them once, before it changes anything, so that a share is of
// the fleet as the run found it, whatever its rounds create.
func Budgets(fleets []schema.Fleet, defaults schema.Defaults, observed []Instance) map[string]DeletionBudget {
	live := map[string]int{}
	for _, inst := range observed {
		if inst.State.Live() {
			live[inst.Fleet] += 1
		} else if _, ok := live[inst.Fleet]; !ok {
			live[inst.Fleet] = 0
		}
	}
	settings := map[string]schema.Disruption{}
	for name := range live {
		settings[name] = defaults.Disruption
	}
	for i := range fleets {
		settings[fleets[i].Name] = defaults.For(&fleets[i]).Disruption
	}
	out := map[string]DeletionBudget{}
	for name, d := range settings {
		b := d.Budget
		if b.Field == "" {
			b = schema.DefaultBudget
		}
		n := live[name]
		db := DeletionBudget{Limit: b.Limit(n), RefuseOver: d.RefuseOver, RefuseField: d.RefuseField}
		switch {
		case b.Percent:
			db.Says = fmt.Sprintf("%s %s of fleet %s's %s: %d per run", b.Field, b.Raw, name, nodes(n, "live node"), db.Limit)
		case db.Limit == 0:
			db.Says = fmt.Sprintf("%s 0: no live node of fleet %s is deleted", b.Field, name)
		default:
			db.Says = fmt.Sprintf("%s %d: %s of fleet %s per run", b.Field, db.Limit, nodes(db.Limit, "live node"), name)
		}
		out[name] = db
	}
	return out
}

func nodes(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// replaces reports whether a delete's node gives way to a create of its
// workload: a move, or a replacement by a newer bootstrap.
func replaces(c Cause) bool { return c == CauseMoved || c == CauseReplaced }

// limit holds back, fleet by fleet, the live deletions the circuit
// breaker refuses or the disruption budget defers, with the creates that
// would replace them. deletes are in the order to apply them, most
// expensive first among the live ones, which is the order the budget goes
// by; of a workload's creates, the last ones are those held.
func (c *Changes) limit(creates, deletes []Action, budgets map[string]DeletionBudget) ([]Action, []Action) {
	if budgets == nil {
		return creates, deletes
	}
	needed := map[string]int{}
	for _, d := range deletes {
		if d.Cause.Live() {
			needed[d.Fleet]++
		}
	}
	var refusals []string
	refused := map[string]bool{}
	for _, fleet := range slices.Sorted(maps.Keys(needed)) {
		b := budgets[fleet]
		if b.RefuseOver != nil && needed[fleet] > *b.RefuseOver {
			refused[fleet] = true
			refusals = append(refusals, fmt.Sprintf("refusing to delete %d running instances of fleet %s: %s allows %d per run; raise it, or remove it to roll the change out under the disruption budget", needed[fleet], fleet, b.RefuseField, *b.RefuseOver))
		}
	}
	c.Refusal = strings.Join(refusals, "; ")

	left := map[string]int{}
	for fleet, b := range budgets {
		left[fleet] = max(0, b.Limit-b.Spent)
	}
	// Per workload: its moved and replaced deletes, and how many of them
	// go ahead, each letting one create go with it.
	moving, going := map[string]int{}, map[string]int{}
	heldWorkload := map[string]bool{}
	deferred := map[string]int{}
	kept := deletes[:0:0]
	for _, d := range deletes {
		key := d.Fleet + "/" + d.Workload
		_, budgeted := budgets[d.Fleet]
		switch {
		case !d.Cause.Live():
			kept = append(kept, d)
			continue
		case refused[d.Fleet]:
			c.Refused = append(c.Refused, d)
			heldWorkload[key] = true
			continue
		}
		if replaces(d.Cause) {
			moving[key]++
		}
		switch {
		case !budgeted:
			kept = append(kept, d)
		case left[d.Fleet] > 0:
			left[d.Fleet]--
			kept = append(kept, d)
		default:
			c.Deferred = append(c.Deferred, d)
			deferred[d.Fleet]++
			continue
		}
		if replaces(d.Cause) {
			going[key]++
		}
	}

	// A workload's creates beyond what replaces its moved and replaced
	// nodes replace nothing: they always go. Of the others, one goes for
	// each such delete that does.
	total := map[string]int{}
	for _, a := range creates {
		total[a.Fleet+"/"+a.Workload]++
	}
	allowed := map[string]int{}
	for key, n := range total {
		allowed[key] = n - min(n, moving[key]) + min(n, going[key])
	}
	seen := map[string]int{}
	var ahead, heldCreates []Action
	for _, a := range creates {
		key := a.Fleet + "/" + a.Workload
		seen[key]++
		switch {
		case heldWorkload[key]:
			// A refused workload keeps its creates back too, or a move
			// would run both the old and the new nodes.
			c.Refused = append(c.Refused, a)
		case seen[key] > allowed[key]:
			heldCreates = append(heldCreates, a)
		default:
			ahead = append(ahead, a)
		}
	}
	// Refused and deferred actions read as actions do: creates, then
	// deletes.
	c.Refused = append(slices.DeleteFunc(slices.Clone(c.Refused), func(a Action) bool { return a.Kind == Delete }),
		slices.DeleteFunc(slices.Clone(c.Refused), func(a Action) bool { return a.Kind == Create })...)
	c.Deferred = append(heldCreates, c.Deferred...)
	var says []string
	for _, fleet := range slices.Sorted(maps.Keys(deferred)) {
		b := budgets[fleet]
		s := b.Says
		if b.Spent > 0 {
			s += fmt.Sprintf(", %d spent this run", b.Spent)
		}
		says = append(says, s)
	}
	c.Deferral = strings.Join(says, "; ")
	return ahead, kept
}
