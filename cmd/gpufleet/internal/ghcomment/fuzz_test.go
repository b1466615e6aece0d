// SPDX-License-Identifier: Apache-2.0

package ghcomment

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplit checks that splitting keeps every part within the limit,
// loses no text, and leaves no code block or section open in a part.
func FuzzSplit(f *testing.F) {
	f.Add(bigPlan()[:20000], 8192)
	f.Add("<details><summary>x</summary>\n```diff\n+ a\n- b\n```\n</details>\n", 40)
	f.Add(strings.Repeat("```\n", 7)+strings.Repeat("y", 500), 300)
	f.Add("ünïcödé ✓ "+strings.Repeat("€", 3000), 1024)
	f.Fuzz(func(t *testing.T, body string, limit int) {
		if !utf8.ValidString(body) || limit < 512 || limit > MaxLength {
			t.Skip()
		}
		parts := Split(body, limit)
		var kept strings.Builder
		for i, p := range parts {
			if n := utf8.RuneCountInString(p); n > limit {
				t.Fatalf("part %d has %d characters, over %d", i, n, limit)
			}
			// Every part but the last closes what it opened; the last ends
			// as the body does.
			if i < len(parts)-1 && fences(p)%2 != 0 && !strings.Contains(body, "````") {
				t.Fatalf("part %d of %d leaves a code block open", i, len(parts))
			}
			kept.WriteString(p)
		}
		if got, want := count(kept.String()), count(body); got < want {
			t.Fatalf("the parts hold %d non-space characters of %d", got, want)
		}
	})
}

// fences counts the lines that open or close a code block: those that
// start with three backticks, as Markdown has it.
func fences(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			n++
		}
	}
	return n
}

// count counts the characters that are not spaces, fences or section
// tags, which splitting may add but must never drop.
func count(s string) int {
	s = strings.ReplaceAll(s, "```", "")
	n := 0
	for _, r := range s {
		if r > ' ' {
			n++
		}
	}
	return n
}
