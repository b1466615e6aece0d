// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// indexes returns the list positions present under prefix, in order: the
// Query protocol flattens lists as Prefix.1, Prefix.2.Field, ...
func indexes(form url.Values, prefix string) []int {
	seen := map[int]bool{}
	for key := range form {
		rest, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			continue
		}
		digits, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(digits); err == nil && n > 0 {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// list returns the values of a flat list of strings, Prefix.N.
func list(form url.Values, prefix string) []string {
	var out []string
	for _, n := range indexes(form, prefix) {
		if v := form.Get(fmt.Sprintf("%s.%d", prefix, n)); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// tag is one key and value, in request order.
type tag struct{ key, value string }

// tagList reads Prefix.N.Key and Prefix.N.Value.
func tagList(form url.Values, prefix string) ([]tag, *apiError) {
	var tags []tag
	for _, n := range indexes(form, prefix) {
		key := form.Get(fmt.Sprintf("%s.%d.Key", prefix, n))
		value := form.Get(fmt.Sprintf("%s.%d.Value", prefix, n))
		if err := checkTag(key, value); err != nil {
			return nil, err
		}
		tags = append(tags, tag{key, value})
	}
	return tags, nil
}

// maxTags is EC2's limit of tags on one resource.
const maxTags = 50

func checkTag(key, value string) *apiError {
	switch {
	case key == "":
		return invalidValue("Tag key cannot be empty.")
	case len(key) > 128:
		return invalidValue("Tag key exceeds the maximum length of 128 characters")
	case len(value) > 256:
		return invalidValue("Tag value exceeds the maximum length of 256 characters")
	case strings.HasPrefix(strings.ToLower(key), "aws:"):
		return invalidValue("Tag keys starting with 'aws:' are reserved for internal use")
	}
	return nil
}

// filter is one Filter.N: a name and the values any of which may match.
type filter struct {
	name   string
	values []string
}

func filters(form url.Values) ([]filter, *apiError) {
	var out []filter
	for _, n := range indexes(form, "Filter") {
		name := form.Get(fmt.Sprintf("Filter.%d.Name", n))
		if name == "" {
			return nil, missingParameter(fmt.Sprintf("Filter.%d.Name", n))
		}
		out = append(out, filter{name: name, values: list(form, fmt.Sprintf("Filter.%d.Value", n))})
	}
	return out, nil
}

// knownFilters reads a call's filters, refusing any the action does not
// know.
func knownFilters[V any](form url.Values, known map[string]V, tagged bool) ([]filter, *apiError) {
	fs, apiErr := filters(form)
	if apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkFilters(fs, known, tagged); apiErr != nil {
		return nil, apiErr
	}
	return fs, nil
}

// checkFilters refuses a filter the action does not know: one not in
// known, unless it is tag:KEY and the action's resources are tagged.
func checkFilters[V any](fs []filter, known map[string]V, tagged bool) *apiError {
	for _, f := range fs {
		if _, ok := known[f.name]; !ok && !(tagged && strings.HasPrefix(f.name, "tag:")) {
			return invalidValue("The filter '%s' is invalid", f.name)
		}
	}
	return nil
}

// matchesTable reports whether x passes every filter, each read off x by
// the table's function for its name (which checkFilters made sure of).
func matchesTable[X any](x X, fs []filter, table map[string]func(X) []string) bool {
	for _, f := range fs {
		if !f.matches(table[f.name](x)) {
			return false
		}
	}
	return true
}

// matches reports whether any value of the filter matches any of the
// resource's values.
func (f filter) matches(have []string) bool {
	for _, want := range f.values {
		for _, v := range have {
			if glob(want, v) {
				return true
			}
		}
	}
	return false
}

// glob matches EC2 filter values: * is any run of characters, ? any one,
// and a backslash escapes the character after it (a final one is itself).
func glob(pattern, s string) bool {
	p, r := []rune(pattern), []rune(s)
	// star is where the last * was and how much of s it had taken.
	starP, starR := -1, 0
	i, j := 0, 0
	for j < len(r) {
		switch {
		case i < len(p) && p[i] == '*':
			starP, starR = i, j
			i++
		case i < len(p) && p[i] == '\\' && i+1 < len(p) && p[i+1] == r[j]:
			i += 2
			j++
		case i < len(p) && (p[i] != '\\' || i+1 == len(p)) && (p[i] == '?' || p[i] == r[j]):
			i++
			j++
		case starP >= 0:
			starR++
			i, j = starP+1, starR
		default:
			return false
		}
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}

// intParam reads an optional integer parameter.
func intParam(form url.Values, name string) (n int, present bool, err *apiError) {
	raw := form.Get(name)
	if raw == "" {
		return 0, false, nil
	}
	n, convErr := strconv.Atoi(raw)
	if convErr != nil {
		return 0, true, invalidValue("Invalid value '%s' for %s", raw, name)
	}
	return n, true, nil
}
