// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// cueProblem is one CUE error before it is placed in the repository.
type cueProblem struct {
	path      []string
	message   string
	positions []Position
}

var (
	disjunctionRE = regexp.MustCompile(`^\d+ errors in empty disjunction:?$`)
	conflictRE    = regexp.MustCompile(`^conflicting values (.+) and (.+)$`)
)

// addCUEErrors turns CUE's errors into ours. CUE reports every position
// involved, the schema's included; the one shown first is in the fleet or
// config file, and a broken policy is named in the message.
func (l *loader) addCUEErrors(root cue.Value, err error) {
	var problems []cueProblem
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		p := cueProblem{path: e.Path(), message: fmt.Sprintf(format, args...)}
		if len(p.path) > 0 && p.path[0] == "#Repository" {
			p.path = p.path[1:]
		}
		for _, pos := range cueerrors.Positions(e) {
			if pos := position(pos); pos.File != "" && pos.File != schemaFile {
				p.positions = append(p.positions, pos)
			}
		}
		problems = append(problems, p)
	}
	for _, p := range collapseDisjunctions(problems) {
		l.errs.errs = append(l.errs.errs, l.place(root, p))
	}
}

func (l *loader) place(root cue.Value, p cueProblem) *Error {
	out := &Error{Path: pathString(p.path), Message: p.message}
	var policy *Position
	for _, pos := range p.positions {
		if strings.HasPrefix(pos.File, PolicyDir+"/") {
			// The deepest position is the rule itself, not the pattern
			// that introduced it.
			if policy == nil || pos.compare(*policy) > 0 {
				policy = &pos
			}
		} else if out.File == "" {
			out.Position = pos
		} else {
			out.Also = append(out.Also, pos)
		}
	}
	if out.File == "" {
		out.Position, out.guessed = l.nearestPosition(root, p.path), true
	}
	if policy != nil {
		out.Message = fmt.Sprintf("breaks the policy at %s: %s", policy, out.Message)
	}
	if len(p.path) == 1 && out.Message == "field not allowed" {
		out.Message += ": a repository defines only gpufleet and fleets"
	}
	if len(p.path) == 4 && p.path[0] == "fleets" && p.path[2] == "defaults" && out.Message == "field not allowed" {
		out.Message += ": a fleet may set migrationThreshold, spotRiskPremium and disruption for itself"
	}
	if len(p.path) == 3 && p.path[0] == "gpufleet" && (p.path[1] == "clouds" || p.path[1] == "pricing") && out.Message == "field not allowed" {
		out.Message = fmt.Sprintf("unknown cloud %q: gpufleet knows %s%s", p.path[2], strings.Join(catalog.Clouds, ", "), didYouMean(p.path[2], catalog.Clouds))
	}
	return out
}

// collapseDisjunctions turns CUE's report on a value that matches no branch
// of a disjunction — a header plus one error per branch — into the one
// message that helps: the bound it breaks, or the values it may take.
func collapseDisjunctions(problems []cueProblem) []cueProblem {
	var out []cueProblem
	for i := 0; i < len(problems); i++ {
		p := problems[i]
		if !disjunctionRE.MatchString(p.message) {
			out = append(out, p)
			continue
		}
		key := strings.Join(p.path, ".")
		var branches []cueProblem
		for j := i + 1; j < len(problems); j++ {
			if strings.Join(problems[j].path, ".") == key && !disjunctionRE.MatchString(problems[j].message) {
				branches = append(branches, problems[j])
				problems = slices.Delete(problems, j, j+1)
				j--
			}
		}
		out = append(out, mergeBranches(p, branches)...)
	}
	return out
}

func mergeBranches(header cueProblem, branches []cueProblem) []cueProblem {
	if len(branches) == 0 {
		return []cueProblem{header}
	}
	var conflicts, others []cueProblem
	for _, b := range branches {
		if conflictRE.MatchString(b.message) {
			conflicts = append(conflicts, b)
		} else {
			others = append(others, b)
		}
	}
	// A bound or a type error says more than "conflicting with the default".
	if len(others) > 0 {
		return others
	}
	// Every branch conflicts with the same written value: list the others.
	value, alternatives := "", []string{}
	for _, c := range conflicts {
		m := conflictRE.FindStringSubmatch(c.message)
		a, b := m[1], m[2]
		switch value {
		case "":
			value, alternatives = b, append(alternatives, a)
		case b:
			alternatives = append(alternatives, a)
		case a:
			alternatives = append(alternatives, b)
		default:
			return conflicts
		}
	}
	merged := conflicts[0]
	merged.message = fmt.Sprintf("invalid value %s: must be one of %s", value, strings.Join(alternatives, ", "))
	for _, c := range conflicts[1:] {
		merged.positions = append(merged.positions, c.positions...)
	}
	slices.SortFunc(merged.positions, Position.compare)
	merged.positions = slices.Compact(merged.positions)
	return []cueProblem{merged}
}

// nearestPosition finds where in the repository the closest existing
// ancestor of path is written.
func (l *loader) nearestPosition(root cue.Value, path []string) Position {
	if root.Exists() {
		for n := len(path); n > 0; n-- {
			v := root.LookupPath(cuePath(path[:n]))
			if !v.Exists() {
				continue
			}
			if pos := userPosition(v); pos.File != "" {
				return pos
			}
		}
	}
	if len(path) >= 2 && path[0] == "fleets" {
		if pos, ok := l.fleetDecl[path[1]]; ok {
			return pos
		}
	}
	return Position{File: ConfigFile}
}

// userPosition is where a value is written in the repository, ignoring the
// schema's contribution and preferring a fleet or config file to a policy.
func userPosition(v cue.Value) Position {
	candidates := []Position{position(v.Pos())}
	if _, args := v.Expr(); len(args) > 0 {
		for _, a := range args {
			candidates = append(candidates, position(a.Pos()))
		}
	}
	var policy Position
	for _, pos := range candidates {
		switch {
		case pos.File == "" || pos.File == schemaFile:
		case strings.HasPrefix(pos.File, PolicyDir+"/"):
			if policy.File == "" {
				policy = pos
			}
		default:
			return pos
		}
	}
	return policy
}
