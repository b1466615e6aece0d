// SPDX-License-Identifier: Apache-2.0

package plancomment

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Header starts part i of n: the marker that finds the comment again, and
// for a split plan the part's number, hidden, and said to the reader.
func Header(marker string, i, n int) string {
	if n == 1 {
		return marker + "\n"
	}
	return fmt.Sprintf("%s\n<!-- part %d/%d -->\n_Part %d of %d._\n\n", marker, i, n, i, n)
}

// partRE reads the part number from a comment's hidden header.
var partRE = regexp.MustCompile(`<!-- part (\d+)/\d+ -->`)

// Part says which part of a plan a comment is: ok when the comment starts
// with marker, and n is 1 for a plan that was never split.
func Part(body, marker string) (n int, ok bool) {
	if !strings.HasPrefix(body, marker) {
		return 0, false
	}
	if m := partRE.FindStringSubmatch(body); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n, true
		}
	}
	return 1, true
}

// Body is the text of part i of n: its header, then the part without the
// marker the plan may already start with.
func Body(marker, part string, i, n int) string {
	return Header(marker, i, n) + strings.TrimPrefix(part, marker+"\n")
}
