// SPDX-License-Identifier: Apache-2.0

package plancomment

import (
	"strings"
	"testing"
	"unicode/utf8"
)

const marker = "<!-- gpufleet-plan -->"

func TestPartReadsWhatHeaderWrites(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		part   int
		isOurs bool
	}{
		{"a plan never split", Body(marker, marker+"\nNo changes\n", 1, 1), 1, true},
		{"the third of five", Body(marker, "more\n", 3, 5), 3, true},
		{"someone else's comment", "LGTM", 0, false},
		{"the marker quoted, not leading", "> " + marker + "\n<!-- part 2/3 -->", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := Part(tt.body, marker)
			if n != tt.part || ok != tt.isOurs {
				t.Errorf("Part = %d, %v; want %d, %v", n, ok, tt.part, tt.isOurs)
			}
		})
	}
}

func TestBodyKeepsOneMarker(t *testing.T) {
	got := Body(marker, marker+"\nplan\n", 1, 1)
	if strings.Count(got, marker) != 1 || !strings.HasPrefix(got, marker+"\n") {
		t.Errorf("Body = %q", got)
	}
}

// A split part reopens what it continues: the next part starts inside the
// same section and code block.
func TestSplitReopensWhatItCuts(t *testing.T) {
	body := "<details><summary>fleet <b>big</b></summary>\n\n```diff\n" + strings.Repeat("+ create a node\n", 2000) + "```\n</details>\n"
	parts := Split(body, 8192)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > 8192 {
			t.Errorf("part %d has %d characters", i+1, n)
		}
		if i > 0 && !strings.HasPrefix(p, "<details><summary>fleet <b>big</b> (continued)</summary>\n```diff\n") {
			t.Errorf("part %d does not reopen its section and code block: %.80q", i+1, p)
		}
	}
}
