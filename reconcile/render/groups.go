// SPDX-License-Identifier: Apache-2.0

package render

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// View says how much a plan or a run shows. The zero View shows every
// change grouped, a line per workload, offer, action and cause; -o json
// always has every action.
type View struct {
	// Detail lists, under each group, the nodes it acts on: the token of
	// each create, the instance of each delete.
	Detail bool
	// nodeLimit bounds the nodes listed under a group, when set: a pull
	// request comment stays readable, and -o json has them all.
	nodeLimit int
}

// markdownNodeLimit is how many nodes a group lists in Markdown, which is
// read in a pull request.
const markdownNodeLimit = 20

// markdown is the view for Markdown: detail bounded.
func (v View) markdown() View {
	v.nodeLimit = markdownNodeLimit
	return v
}

// actionGroup is the actions that read as one line: the same kind,
// workload, offer, cause and reason, at the same price. A fleet of
// thousands of nodes changes in a few such lines, and the reason is said
// once.
type actionGroup struct {
	first   planner.Action
	actions []planner.Action
}

// groupKey is what the actions of a group share.
type groupKey struct {
	kind            planner.ActionKind
	fleet, workload string
	offer           planner.OfferKey
	cause           planner.Cause
	reason          string
	price           int64
	terms           planner.AccountTerms
}

func keyOf(a planner.Action) groupKey {
	return groupKey{a.Kind, a.Fleet, a.Workload, a.Offer, a.Cause, a.Reason, a.PriceMicros + a.EgressMicros, a.AccountTerms}
}

// groupActions groups actions in the order their groups first appear, so
// that creates stay before deletes and deletes in the order they go.
func groupActions(actions []planner.Action) []actionGroup {
	var groups []actionGroup
	index := map[groupKey]int{}
	for _, a := range actions {
		k := keyOf(a)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, actionGroup{first: a})
		}
		groups[i].actions = append(groups[i].actions, a)
	}
	return groups
}

// line is the group as one line: "+ 200 × inference/chat on
// aws/us-east-1/us-east-1a/g6.2xlarge/on-demand at $0.976/h", "- 576 ×
// train/a100 on … at $1.20/h: moved to …, 12% cheaper". The price is a
// node's: a reservation may make what the plan pays for the group less.
// verb, when set, is said after the count, for the groups whose sign is
// not + or -.
func (g actionGroup) line(sign string, verb bool) string {
	a := g.first
	what := fmt.Sprintf("%d × ", len(g.actions))
	if verb {
		what += string(a.Kind) + " "
	}
	line := fmt.Sprintf("%s %s%s/%s on %s", sign, what, a.Fleet, a.Workload, a.Offer)
	if price := a.PriceMicros + a.EgressMicros; price > 0 || a.Kind == planner.Create {
		line += " at " + planner.PriceText(price, a.AccountTerms)
	}
	if a.Kind == planner.Delete {
		line += ": " + a.Reason
	}
	return line
}

// nodes are what detail lists of a group: a create's token, a delete's
// instance.
func (g actionGroup) nodes() []string {
	out := make([]string, 0, len(g.actions))
	for _, a := range g.actions {
		if a.Kind == planner.Create {
			out = append(out, a.Token)
		} else {
			out = append(out, a.Instance)
		}
	}
	return out
}

// sign is how a line of an action starts: + for a create, - for a delete.
func sign(k planner.ActionKind) string {
	if k == planner.Create {
		return "+"
	}
	return "-"
}

// groupLines are actions grouped, a line each, with their nodes below
// when v.Detail. mark replaces the + or - of each line when set, and the
// lines then name the action.
func (v View) groupLines(actions []planner.Action, mark string) []string {
	var lines []string
	groups := groupActions(actions)
	// Without detail, a workload's groups of one action and cause beyond
	// the first few fold into one line: a fleet spread over fifty pools
	// still reads in a screen.
	type causeKey struct {
		kind            planner.ActionKind
		fleet, workload string
		cause           planner.Cause
	}
	byCause := map[causeKey][]int{}
	for i, g := range groups {
		k := causeKey{g.first.Kind, g.first.Fleet, g.first.Workload, g.first.Cause}
		byCause[k] = append(byCause[k], i)
	}
	folded := map[int][]actionGroup{}
	skip := map[int]bool{}
	if !v.Detail {
		for _, idx := range byCause {
			if len(idx) <= maxGroupsPerCause {
				continue
			}
			rest := idx[maxGroupsPerCause-1:]
			for _, i := range rest {
				folded[rest[0]] = append(folded[rest[0]], groups[i])
				skip[i] = true
			}
		}
	}
	for i, g := range groups {
		s := cmp.Or(mark, sign(g.first.Kind))
		if rest, ok := folded[i]; ok {
			lines = append(lines, foldedLine(rest, s, mark != ""))
			continue
		}
		if skip[i] {
			continue
		}
		lines = append(lines, g.line(s, mark != ""))
		if v.Detail {
			lines = append(lines, v.nodeLines(g.nodes())...)
		}
	}
	return lines
}

// maxGroupsPerCause is how many lines a workload's actions of one kind and
// cause take in a view without detail, the last folding the rest.
const maxGroupsPerCause = 8

// foldedLine is groups of one workload, action and cause on many offers,
// as one line: "- 1200 × infer/serve on 41 more offers at $0.063–$0.404/h:
// surplus: …", the reason said when every group has the same.
func foldedLine(groups []actionGroup, sign string, verb bool) string {
	a := groups[0].first
	n := 0
	low, high := int64(-1), int64(0)
	reason := a.Reason
	for _, g := range groups {
		n += len(g.actions)
		price := g.first.PriceMicros + g.first.EgressMicros
		if low < 0 || price < low {
			low = price
		}
		high = max(high, price)
		if g.first.Reason != reason {
			reason = string(a.Cause)
		}
	}
	what := fmt.Sprintf("%d × ", n)
	if verb {
		what += string(a.Kind) + " "
	}
	line := fmt.Sprintf("%s %s%s/%s on %d more offers", sign, what, a.Fleet, a.Workload, len(groups))
	switch {
	case high == 0 && a.Kind == planner.Delete:
	case low == high:
		line += " at " + catalog.Money(low) + "/h"
	default:
		line += " at " + catalog.Money(low) + "–" + catalog.Money(high) + "/h"
	}
	if a.Kind == planner.Delete {
		line += ": " + reason
	}
	return line + " (--detail lists them)"
}

// nodeLines list nodes under their group, as many as the view allows.
func (v View) nodeLines(nodes []string) []string {
	var lines []string
	for i, node := range nodes {
		if v.nodeLimit > 0 && i == v.nodeLimit {
			lines = append(lines, fmt.Sprintf("    … and %d more (-o json lists every one)", len(nodes)-i))
			break
		}
		lines = append(lines, "    "+node)
	}
	return lines
}

// deferredCounts counts the deletions a disruption budget holds for later
// runs, and the creates held with them.
func deferredCounts(c planner.Changes) (creates, deletes int) {
	return planner.Changes{Actions: c.Deferred}.Counts()
}

// deferredPhrase is what the headline says of the deferred actions: "518
// deferred to later runs", "" when none are.
func deferredPhrase(c planner.Changes) string {
	creates, deletes := deferredCounts(c)
	switch {
	case deletes > 0 && creates > 0:
		return fmt.Sprintf("%d deletions and %d creates deferred to later runs", deletes, creates)
	case deletes > 0:
		return fmt.Sprintf("%d deferred to later runs", deletes)
	case creates > 0:
		return fmt.Sprintf("%d creates deferred to later runs", creates)
	}
	return ""
}

// deferredHeading opens the list of deferred actions: why they wait.
func deferredHeading(c planner.Changes) string {
	if c.Deferral == "" {
		return "Deferred to later runs"
	}
	return "Deferred to later runs: " + strings.TrimSuffix(c.Deferral, ".")
}
