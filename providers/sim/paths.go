// SPDX-License-Identifier: Apache-2.0

package sim

import "strings"

// MatchPath matches a request path's segments against a front's route
// pattern, "*" standing for one variable segment ("instances/*"), and
// returns the variable segments in order, none of which may be empty.
func MatchPath(pattern string, seg []string) ([]string, bool) {
	want := strings.Split(pattern, "/")
	if len(want) != len(seg) {
		return nil, false
	}
	var args []string
	for i, w := range want {
		switch {
		case w == "*" && seg[i] != "":
			args = append(args, seg[i])
		case w != seg[i]:
			return nil, false
		}
	}
	return args, true
}
