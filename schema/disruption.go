// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
)

// A disruption budget is a number or a string in CUE, so that "10%" and 8
// both read naturally; what either may hold is checked here, where the
// message can say what a budget is.

// percentRE is a share of a fleet's nodes, to a hundredth of a percent.
var percentRE = regexp.MustCompile(`^([0-9]{1,3})(?:\.([0-9]{1,2}))?%$`)

const budgetForms = `a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`

// parseBudget reads the budget value v, set at field; problem says what is
// wrong with it, or is "".
func parseBudget(v cue.Value, field string) (b Budget, problem string) {
	b.Field = field
	switch v.Kind() {
	case cue.IntKind:
		n, err := v.Int64()
		if err != nil || n < 0 || n > MaxNodes {
			return b, fmt.Sprintf("%v is not %s", v, budgetForms)
		}
		b.Nodes, b.Raw = int(n), strconv.FormatInt(n, 10)
		return b, ""
	case cue.FloatKind:
		return b, fmt.Sprintf("%v is not a whole number of nodes: a budget is %s", v, budgetForms)
	case cue.StringKind:
		s, _ := v.String()
		return parsePercent(s, field)
	}
	return b, fmt.Sprintf("%v is not %s", v, budgetForms)
}

func parsePercent(s, field string) (b Budget, problem string) {
	b.Field = field
	m := percentRE.FindStringSubmatch(s)
	if m == nil {
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return b, fmt.Sprintf("%q is negative: a budget is %s", s, budgetForms)
		}
		return b, fmt.Sprintf("%q is not %s", s, budgetForms)
	}
	whole, _ := strconv.Atoi(m[1])
	frac := 0
	if m[2] != "" {
		frac, _ = strconv.Atoi((m[2] + "0")[:2])
	}
	b.Percent, b.Hundredths, b.Raw = true, whole*100+frac, s
	if b.Hundredths > 100*100 {
		return b, fmt.Sprintf("%q is over 100%%: a budget cannot allow more nodes than the fleet has", s)
	}
	return b, ""
}

// ParseBudget reads a budget written as text, a count ("8") or a share
// ("10%"), as a command line gives one; field says where it is set.
func ParseBudget(s, field string) (Budget, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return Budget{}, fmt.Errorf("%d is not %s", n, budgetForms)
		}
		return Budget{Nodes: n, Field: field, Raw: s}, nil
	}
	b, problem := parsePercent(s, field)
	if problem != "" {
		return Budget{}, errors.New(problem)
	}
	return b, nil
}

// checkDisruption reads the disruption settings below v at prefix (such as
// "defaults.disruption"), naming them by field, the path shown to a user.
// It sets d.Budget when a budget is written and reports whether one is.
func (l *loader) checkDisruption(v cue.Value, prefix, field string, d *Disruption, fail func(at, format string, args ...any)) bool {
	if d.RefuseOver != nil {
		d.RefuseField = field + ".refuseOver"
	}
	bv := v.LookupPath(cue.ParsePath(prefix + ".budget"))
	if !bv.Exists() {
		return false
	}
	b, problem := parseBudget(bv, field+".budget")
	if problem != "" {
		fail(prefix+".budget", "%s", problem)
		return false
	}
	d.Budget = b
	return true
}

// resolveBudget settles gpufleet.defaults' budget: the one written, or
// maxDeletions, its former name, or the default.
func (l *loader) resolveBudget(v cue.Value, d *Defaults, fail func(at, format string, args ...any)) {
	written := l.checkDisruption(v, "defaults.disruption", "defaults.disruption", &d.Disruption, fail)
	switch {
	case d.MaxDeletions != nil && v.LookupPath(cue.ParsePath("defaults.disruption.budget")).Exists():
		fail("defaults.maxDeletions", "maxDeletions is the former name of defaults.disruption.budget: set one of the two")
	case d.MaxDeletions != nil:
		d.Disruption.Budget = Budget{Nodes: *d.MaxDeletions, Field: "defaults.maxDeletions", Raw: strconv.Itoa(*d.MaxDeletions)}
	case !written:
		d.Disruption.Budget = DefaultBudget
	}
}

// checkFleetDefaults reads what a fleet sets of the defaults. It needs no
// other file, so it is checked even when gpufleet.cue has errors.
func (l *loader) checkFleetDefaults(fleet *Fleet, v cue.Value) {
	d := fleet.Defaults.Disruption
	if d == nil {
		return
	}
	base := "fleets." + pathString([]string{fleet.Name})
	fail := func(at, format string, args ...any) {
		l.errs.add(valuePosition(v, at), base+"."+at, format, args...)
	}
	l.checkDisruption(v, "defaults.disruption", base+".defaults.disruption", d, fail)
}
