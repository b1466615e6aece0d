// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ActionKind is what an action does to the clouds.
type ActionKind string

const (
	Create ActionKind = "create"
	Delete ActionKind = "delete"
)

// Cause is why an action is needed, for code to branch on; Reason says it
// to a person.
type Cause string

const (
	CausePlaced Cause = "placed"
	// Deletes of instances that do no work: they go first, and no
	// deletion limit holds them back.
	CausePreempted Cause = "preempted"
	CauseFailed    Cause = "failed"
	CauseStopped   Cause = "stopped"
	// Deletes of working nodes.
	CauseDisallowed Cause = "disallowed"
	CauseMoved      Cause = "moved"
	CauseSurplus    Cause = "surplus"
	CauseShed       Cause = "shed"
	// CauseReplaced: the node runs an older bootstrap; a new one takes its
	// place.
	CauseReplaced        Cause = "replaced"
	CauseWorkloadRemoved Cause = "workload-removed"
	CauseFleetRemoved    Cause = "fleet-removed"
)

// Live reports whether a delete for this cause removes a working node.
func (c Cause) Live() bool {
	switch c {
	case CausePreempted, CauseFailed, CauseStopped:
		return false
	}
	return true
}

// Action is one change to make in a cloud.
type Action struct {
	Kind     ActionKind `json:"kind"`
	Fleet    string     `json:"fleet"`
	Workload string     `json:"workload"`
	Offer    OfferKey   `json:"offer"`
	// Token makes a create idempotent: the same token never launches a
	// second instance.
	Token string `json:"token,omitempty"`
	// Instance is the instance a delete removes.
	Instance    string `json:"instance,omitempty"`
	PriceMicros int64  `json:"priceMicros"`
	// AccountTerms say how the price comes from the list price.
	AccountTerms
	// EgressMicros is what the node adds per hour for pulling its
	// workload's data across; its cost is price plus egress.
	EgressMicros int64  `json:"egressMicros,omitempty"`
	Cause        Cause  `json:"cause"`
	Reason       string `json:"reason"`
}

func (a Action) String() string {
	target := a.Token
	if a.Kind == Delete {
		target = a.Instance
	}
	return fmt.Sprintf("%s %s/%s on %s (%s): %s", a.Kind, a.Fleet, a.Workload, a.Offer, target, a.Reason)
}

// DiffOptions guard and shape the actions.
type DiffOptions struct {
	// Revision goes into create tokens; the caller picks something that
	// changes when the workload's spec does.
	Revision map[string]string
	// Budgets limit, fleet by fleet, the live nodes a run deletes (see
	// Budgets); nil limits nothing.
	Budgets map[string]DeletionBudget
	// Prune deletes the instances of fleets no longer in the repository.
	Prune bool
	// Retired tokens must not be used again: their instances ended, and a
	// cloud may still return the ended instance for them.
	Retired []string
}

// Changes is what it takes to go from what runs to the plan.
type Changes struct {
	// Actions in the order to apply them: creates, then deletes.
	Actions []Action `json:"actions"`
	// Refused deletions, with the reason in Refusal: a circuit breaker a
	// reviewed change trips, holding back the whole change.
	Refused []Action `json:"refused,omitempty"`
	Refusal string   `json:"refusal,omitempty"`
	// Deferred are the deletions of live nodes a disruption budget holds
	// for later runs, with the creates that would replace them (a move is
	// made before it breaks, chunk by chunk); Deferral says which budget.
	// Creates that replace nothing are never deferred.
	Deferred []Action `json:"deferred,omitempty"`
	Deferral string   `json:"deferral,omitempty"`
	// Orphans are instances of fleets removed from the repository, left
	// alone because pruning is off.
	Orphans []Instance `json:"orphans,omitempty"`
}

// DeferredCounts returns the number of creates and deletes a disruption
// budget holds for later runs.
func (c Changes) DeferredCounts() (creates, deletes int) {
	for _, a := range c.Deferred {
		if a.Kind == Create {
			creates++
		} else {
			deletes++
		}
	}
	return creates, deletes
}

// Counts returns the number of creates and deletes.
func (c Changes) Counts() (creates, deletes int) {
	for _, a := range c.Actions {
		if a.Kind == Create {
			creates++
		} else {
			deletes++
		}
	}
	return creates, deletes
}

// Diff turns a plan and what runs into ordered actions. Replacements create
// before they delete, so capacity never dips; preempted instances are
// cleaned up first among deletes, then the most expensive go first.
func Diff(plan *Plan, observed []Instance, opts DiffOptions) Changes {
	retired := map[string]bool{}
	for _, t := range opts.Retired {
		retired[t] = true
	}
	byWorkload := map[string][]Instance{}
	for _, inst := range observed {
		if inst.Token != "" {
			retired[inst.Token] = true
		}
		byWorkload[inst.Fleet+"/"+inst.Workload] = append(byWorkload[inst.Fleet+"/"+inst.Workload], inst)
	}

	var creates, deletes []Action
	var changes Changes
	planned := map[string]bool{}
	inSpec := map[string]bool{}
	for _, f := range plan.Fleets {
		inSpec[f.Name] = true
		for _, w := range f.Workloads {
			key := f.Name + "/" + w.Name
			planned[key] = true
			c, d := diffWorkload(f.Name, w, byWorkload[key], opts.Revision[key], retired)
			creates, deletes = append(creates, c...), append(deletes, d...)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byWorkload)) {
		if planned[key] {
			continue
		}
		for _, inst := range byWorkload[key] {
			if !inst.State.Live() && !inst.State.Leftover() && inst.State != StatePreempted {
				continue
			}
			switch {
			case inSpec[inst.Fleet]:
				deletes = append(deletes, deleteAction(inst, CauseWorkloadRemoved, "workload removed from the fleet"))
			case opts.Prune:
				deletes = append(deletes, deleteAction(inst, CauseFleetRemoved, "fleet removed from the repository (prune is on)"))
			case inst.State != StatePreempted:
				changes.Orphans = append(changes.Orphans, inst)
			}
		}
	}
	slices.SortStableFunc(deletes, func(a, b Action) int {
		return cmp.Or(
			cmp.Compare(rank(a), rank(b)),
			cmp.Compare(b.PriceMicros, a.PriceMicros),
			cmp.Compare(a.Instance, b.Instance),
		)
	})
	creates, deletes = changes.limit(creates, deletes, opts.Budgets)
	changes.Actions = append(creates, deletes...)
	if changes.Actions == nil {
		changes.Actions = []Action{}
	}
	return changes
}

// rank orders deletes: cleaning up what does no work costs nothing and goes
// first.
func rank(a Action) int {
	if !a.Cause.Live() {
		return 0
	}
	return 1
}

// diffWorkload compares one workload's plan with its instances. Every
// delete carries the cause that is true of it: a node whose offer the spec
// no longer allows is disallowed; of the others, as many as the plan
// creates elsewhere are moved, and the rest are surplus (the workload asks
// for fewer) or shed (the plan cannot keep them, and says why).
func diffWorkload(fleet string, w WorkloadPlan, observed []Instance, revision string, retired map[string]bool) (creates, deletes []Action) {
	byOffer := map[OfferKey][]Instance{}
	live := 0
	for _, inst := range observed {
		switch inst.State {
		case StatePreempted:
			deletes = append(deletes, deleteAction(inst, CausePreempted, "preempted: clean up"))
		case StateFailed:
			deletes = append(deletes, deleteAction(inst, CauseFailed, "failed: its creation failed; deleted so it holds no quota or disk"))
		case StateStopping:
			deletes = append(deletes, deleteAction(inst, CauseStopped, "stopped: not a working node; deleted so it stops billing for its disks"))
		case StatePending, StateRunning:
			if !w.KeepOutdated && outdated(inst, w.Bootstrap) {
				deletes = append(deletes, deleteAction(inst, CauseReplaced, replacedReason(inst, w.Bootstrap)))
				continue
			}
			byOffer[inst.OfferKey] = append(byOffer[inst.OfferKey], inst)
			live++
		}
	}
	want := map[OfferKey]Placement{}
	for _, pl := range w.Placements {
		want[pl.Offer] = pl
	}
	unfit := map[OfferKey]Reason{}
	for _, u := range w.Unfit {
		unfit[u.Offer] = u.Reason
	}
	offers := slices.SortedFunc(maps.Keys(byOffer), OfferKey.Compare)
	for _, pl := range w.Placements {
		if _, ok := byOffer[pl.Offer]; !ok {
			offers = append(offers, pl.Offer)
		}
	}
	slices.SortFunc(offers, OfferKey.Compare)
	var leaving []Action
	// egress is what each leaving node pays for its data where it runs.
	egress := map[string]int64{}
	for _, offer := range offers {
		running := byOffer[offer]
		// Keep running before pending, then the oldest: they have proven
		// themselves.
		slices.SortStableFunc(running, func(a, b Instance) int {
			return cmp.Or(cmp.Compare(stateRank(a.State), stateRank(b.State)), a.LaunchedAt.Compare(b.LaunchedAt), cmp.Compare(a.ID, b.ID))
		})
		pl := want[offer]
		keep := min(len(running), pl.Count)
		for _, inst := range running[keep:] {
			d := deleteAction(inst, "", "")
			d.PriceMicros, d.AccountTerms = pl.PriceMicros, pl.AccountTerms
			if d.PriceMicros == 0 {
				d.PriceMicros, d.AccountTerms = priceOf(w, offer)
			}
			egress[d.Instance] = egressOf(w, offer)
			if reason, ok := unfit[offer]; ok {
				d.Cause, d.Reason = CauseDisallowed, "the spec no longer allows it here: "+string(reason)
				deletes = append(deletes, d)
				continue
			}
			leaving = append(leaving, d)
		}
		slot := 0
		for range pl.Count - keep {
			var token string
			token, slot = nextToken(fleet, w.Name, offer, revision, slot, retired)
			creates = append(creates, Action{
				Kind: Create, Fleet: fleet, Workload: w.Name, Offer: offer, Token: token,
				PriceMicros: pl.PriceMicros, AccountTerms: pl.AccountTerms, EgressMicros: pl.EgressMicros, Cause: CausePlaced, Reason: "the plan places a node here",
			})
		}
	}
	// Of the nodes that leave with nothing against their offer, those the
	// workload ends up without are surplus or shed; the rest move to the
	// new nodes.
	fewer := min(len(leaving), max(0, live-disallowed(deletes)-w.Placed))
	for i := range leaving {
		d := &leaving[i]
		switch {
		case i >= fewer:
			d.Cause, d.Reason = CauseMoved, movedReason(*d, egress[d.Instance], creates, i-fewer)
		case w.Desired < live:
			d.Cause, d.Reason = CauseSurplus, fmt.Sprintf("surplus: the workload asks for %d nodes and %d run", w.Desired, live)
		case w.Shortfall != nil:
			d.Cause, d.Reason = CauseShed, fmt.Sprintf("shed (%s): %s", w.Shortfall.Cause, w.Shortfall.Message)
		default:
			d.Cause, d.Reason = CauseSurplus, "surplus: the plan keeps fewer nodes"
		}
	}
	return creates, append(deletes, leaving...)
}

// movedReason says where a moved node goes, the nth of the workload's
// creates standing in for it, and what that saves: on the price, or on the
// price with the egress its data costs (was is what the node pays for its
// data where it runs). A move that saves neither is not made for cost
// (the planner never moves a node for a tie): the plan needs the node
// elsewhere to hold the workload's constraints.
func movedReason(d Action, egress int64, creates []Action, nth int) string {
	if nth >= len(creates) {
		return "moved: the plan places this node elsewhere"
	}
	to := creates[nth]
	was, now := d.PriceMicros, to.PriceMicros
	wasCost, nowCost := was+egress, now+to.EgressMicros
	switch {
	case was > 0 && now < was:
		return fmt.Sprintf("moved to %s, %.0f%% cheaper", to.Offer, 100*float64(was-now)/float64(was))
	case was > 0 && nowCost < wasCost:
		return fmt.Sprintf("moved to %s, nearer its data: %.0f%% cheaper with egress", to.Offer, 100*float64(wasCost-nowCost)/float64(wasCost))
	}
	return fmt.Sprintf("moved to %s at no saving: the plan needs it there for the workload's spread, gang, quotas or capacity", to.Offer)
}

// disallowed counts the deletes of nodes on offers the spec rules out.
func disallowed(deletes []Action) int {
	n := 0
	for _, d := range deletes {
		if d.Cause == CauseDisallowed {
			n++
		}
	}
	return n
}

func stateRank(s State) int {
	if s == StateRunning {
		return 0
	}
	return 1
}

// egressOf is what a node of the workload pays per hour for its data on an
// offer, as the plan counts it.
func egressOf(w WorkloadPlan, offer OfferKey) int64 {
	for _, pl := range slices.Concat(w.Placements, w.Leaving) {
		if pl.Offer == offer {
			return pl.EgressMicros
		}
	}
	return 0
}

func priceOf(w WorkloadPlan, offer OfferKey) (int64, AccountTerms) {
	for _, pl := range slices.Concat(w.Placements, w.Leaving) {
		if pl.Offer == offer {
			return pl.PriceMicros, pl.AccountTerms
		}
	}
	return 0, AccountTerms{}
}

func deleteAction(inst Instance, cause Cause, reason string) Action {
	return Action{Kind: Delete, Fleet: inst.Fleet, Workload: inst.Workload, Offer: inst.OfferKey, Instance: inst.ID, Cause: cause, Reason: reason}
}

// nextToken returns the create token of the first free slot from slot on,
// and the slot after it. A slot is free when no instance carries its token
// and it was not retired.
func nextToken(fleet, workload string, offer OfferKey, revision string, slot int, used map[string]bool) (string, int) {
	for ; ; slot++ {
		t := Token(fleet, workload, offer, revision, slot)
		if !used[t] {
			used[t] = true
			return t, slot + 1
		}
	}
}

// Token is the idempotency token of a create: derived from what the node is
// for, so a repeated run asks for the same node, not a second one. It is
// "gf2-", 24 hex digits naming the workload's nodes on the offer at the
// spec revision, "-" and the slot: the slots of one workload and offer
// count up, so a batch of consecutive slots is named by its first token
// (TokenAt). At most 34 ASCII characters, within EC2's 64 for ClientToken
// and GCE's 63 for a label value.
func Token(fleet, workload string, offer OfferKey, revision string, slot int) string {
	h := sha256.New()
	for _, part := range []string{fleet, workload, offer.String(), revision} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return tokenPrefix + hex.EncodeToString(h.Sum(nil))[:tokenHashLen] + "-" + strconv.Itoa(slot)
}

const (
	tokenPrefix  = "gf2-"
	tokenHashLen = 24
)

// TokenSlot splits a token into the part every slot of its workload and
// offer shares and its slot. Tokens of an older form have no slot: ok is
// false.
func TokenSlot(token string) (base string, slot int, ok bool) {
	rest, found := strings.CutPrefix(token, tokenPrefix)
	if !found || len(rest) < tokenHashLen+2 || rest[tokenHashLen] != '-' {
		return "", 0, false
	}
	digits := rest[tokenHashLen+1:]
	if len(digits) > 1 && digits[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return token[:len(tokenPrefix)+tokenHashLen+1], n, true
}

// TokenAt is the token of the i-th node of a batch whose first node has
// token first: the same workload and offer, i slots on. A cloud that
// launches a batch under one token and tags every node with it (EC2's
// RunInstances) tells the nodes apart by their launch index; TokenAt turns
// that back into each node's own token. ok is false for a token of an
// older form, which never named a batch, unless i is 0.
func TokenAt(first string, i int) (string, bool) {
	if i == 0 {
		return first, true
	}
	base, slot, ok := TokenSlot(first)
	if !ok || i < 0 {
		return "", false
	}
	return base + strconv.Itoa(slot+i), true
}
