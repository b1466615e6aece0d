// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// limitsRepo writes a repository with one fleet and the given file beside
// it, and loads it.
func limitsRepo(t *testing.T, file string, more ...string) error {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte("package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\n"))
	writeFile(t, filepath.Join(dir, "fleets", "solo.cue"), []byte(`package gpufleet

fleets: solo: {
	owner: "team"
	workloads: w: {
		gpu: {model: "L4", perNode: 1}
		nodes: 1
	}
}
`))
	writeFile(t, filepath.Join(dir, "policy", "gen.cue"), []byte("package gpufleet\n\n"+file))
	for i, f := range more {
		writeFile(t, filepath.Join(dir, "policy", fmt.Sprintf("more-%d.cue", i)), []byte("package gpufleet\n\n"+f))
	}
	_, err := Load(dir)
	return err
}

// An expression that would build more values than the bounds is refused
// before CUE evaluates it, with its position and field path: evaluated,
// list.Range(0, 300000000, 1) takes every byte of memory. So is one whose
// size the file does not say, and a builtin taken as a value. What a fleet
// repository writes loads as before.
func TestLoadRefusesWhatWouldBuildHugeValues(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		// want is the error, "" when the file loads.
		want string
	}{
		{"the range of the report", "import \"list\"\n\n_x: list.Range(0, 300000000, 1)\n",
			"policy/gen.cue:5:5: _x: list.Range would build 300000000 values; one expression may build at most 10000, and the repository's 20000 in all"},
		{"a range just over the bound", "import \"list\"\n\n_x: list.Range(0, 10001, 1)\n",
			"policy/gen.cue:5:5: _x: list.Range would build 10001 values"},
		{"a range of fractions", "import \"list\"\n\n_x: list.Range(0, 1, 0.00001)\n",
			"policy/gen.cue:5:5: _x: list.Range would build 100000 values"},
		{"a range by a multiplier", "import \"list\"\n\n_x: list.Range(0, 1Gi, 1)\n",
			"policy/gen.cue:5:5: _x: list.Range would build 1073741824 values"},
		{"a range of a number from a field", "import \"list\"\n\n_n: 300_000_000\n_x: list.Range(0, _n, 1)\n",
			"policy/gen.cue:6:5: _x: list.Range would build 300000000 values"},
		{"a range under an alias", "import l \"list\"\n\n_x: l.Range(0, 3e8, 1)\n",
			"policy/gen.cue:5:5: _x: list.Range would build 300000000 values"},
		{"a range of a value from another file", "import \"list\"\n\n_x: list.Range(0, fleets.solo.workloads.w.nodes, 1)\n",
			"policy/gen.cue:5:5: _x: list.Range is given a value the files do not write out"},
		{"a range taken as a value", "import \"list\"\n\n_r: list.Range\n",
			"policy/gen.cue:5:5: _r: list.Range can only be called where it is written"},
		{"a repeat", "import \"list\"\n\n_x: list.Repeat([1, 2, 3], 400000)\n",
			"policy/gen.cue:5:5: _x: list.Repeat would build 1200000 values"},
		{"a repeated string", "import \"strings\"\n\n_x: strings.Repeat(\"0123456789abcdef\", 100000)\n",
			"policy/gen.cue:5:5: _x: strings.Repeat would take the strings the repository repeats to 1600000 bytes; at most 1048576 bytes are built in all"},
		{"a multiplied string", "_x: \"0123456789abcdef\" * 100000\n",
			"policy/gen.cue:3:5: _x: string multiplication would take the strings the repository repeats to 1600000 bytes"},
		{"nested comprehensions", "import \"list\"\n\n_r: list.Range(0, 1000, 1)\n_x: [for i in _r for j in _r {i * j}]\n",
			"policy/gen.cue:6:18: _x: a comprehension would build 1000000 iterations"},
		{"a comprehension within a comprehension", "import \"list\"\n\n_x: {for i in list.Range(0, 200, 1) {\"\\(i)\": [for j in list.Range(0, 200, 1) {j}]}}\n",
			"policy/gen.cue:5:47: _x.(…): a comprehension would build 40000 iterations"},
		{"a range within a comprehension", "import \"list\"\n\n_x: [for i in [1, 2, 3, 4] {list.Range(0, 5000, 1)}]\n",
			"policy/gen.cue:5:29: _x: list.Range would build 20000 values"},
		{"lists each doubling the last", doubling(15),
			"policy/gen.cue:16:8: _a13: a comprehension would take what the repository's expressions build to 24572 values and iterations; at most 20000 are built in all"},
		{"ranges together", "import \"list\"\n\n_x: list.Range(0, 10000, 1)\n_y: [list.Range(0, 9000, 1), list.Range(0, 9000, 1)]\n",
			"policy/gen.cue:6:30: _y: list.Range would take what the repository's expressions build to 28000 values and iterations; at most 20000 are built in all"},

		{"a long chain of doubling lists", doubling(200), "_a13: a comprehension would take"},
		{"a number squared over and over", "import \"list\"\n\n" + squaring(40) + "_x: list.Range(0, _n40, 1)\n", "_x: list.Range would build more than"},

		{"strings each doubling the last", interpolations(0, 25),
			"policy/gen.cue:22:7: _s19: an interpolation would take the strings the repository repeats to 2097148 bytes; at most 1048576 bytes are built in all"},
		{"strings each concatenating the last twice", "_s0: \"ab\"\n" + strings.Repeat("", 0) + concatenations(25),
			"string concatenation would take the strings the repository repeats to"},

		{"a small range", "import \"list\"\n\nfleets: solo: labels: {for i in list.Range(0, 3, 1) {\"l\\(i)\": \"x\"}}\n", ""},
		{"a range at the bound", "import \"list\"\n\n_x: list.Range(0, 10000, 1)\n", ""},
		{"a comprehension over the fleets", "fleets: [_]: labels: team: \"ml\"\n_all: [for name, f in fleets for w, _ in f.workloads {name + \"/\" + w}]\n", ""},
		{"a separator line", "import \"strings\"\n\n_rule: strings.Repeat(\"-\", 80)\n_also: \"=\" * 80\n", ""},
		{"numbers multiplied", "_a: 3\n_b: _a * 4\n", ""},
		{"labels interpolated", "fleets: [Name=_]: labels: {app: \"\\(Name)-svc\", env: \"prod-\\(Name)\"}\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := limitsRepo(t, tt.file)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want the bound named", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n%v\nwant it to hold\n%s", err, tt.want)
			}
		})
	}
}

// doubling is lists _a0 to _an, each twice as long as the last.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString("_a0: [1, 1]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "_a%d: [for x in _a%d {x}, for x in _a%d {x}]\n", i, i-1, i-1)
	}
	return b.String()
}

// squaring is numbers _n0 to _nn, each the square of the last.
func squaring(n int) string {
	var b strings.Builder
	b.WriteString("_n0: 2\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "_n%d: _n%d * _n%d\n", i, i-1, i-1)
	}
	return b.String()
}

// interpolations is strings _s<from+1> to _s<to>, each the last twice
// over; _s<from> is "ab" when from is 0, and another file's otherwise.
func interpolations(from, to int) string {
	var b strings.Builder
	if from == 0 {
		b.WriteString("_s0: \"ab\"\n")
	}
	for i := from + 1; i <= to; i++ {
		fmt.Fprintf(&b, "_s%d: \"\\(_s%d)\\(_s%d)\"\n", i, i-1, i-1)
	}
	return b.String()
}

// concatenations is _s1 to _sn, each _s<n-1> + _s<n-1>.
func concatenations(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "_s%d: _s%d + _s%d\n", i, i-1, i-1)
	}
	return b.String()
}

// What one file builds from another's fields counts as if they were
// one: a number, a list or a string of another file is followed there.
func TestLoadFollowsOtherFilesFields(t *testing.T) {
	for _, tt := range []struct {
		name        string
		file, other string
		want        string
	}{
		{"a range of another file's number", "import \"list\"\n\n_x: list.Range(0, _n, 1)\n", "_n: 300000000\n",
			"policy/gen.cue:5:5: _x: list.Range would build 300000000 values"},
		{"comprehensions over another file's list", "_x: [for i in _r for j in _r {i * j}]\n", "import \"list\"\n\n_r: list.Range(0, 1000, 1)\n",
			"policy/gen.cue:3:18: _x: a comprehension would build 1000000 iterations"},
		{"strings doubling across files", interpolations(12, 25), interpolations(0, 12),
			"an interpolation would take the strings the repository repeats to"},
		{"a number declared twice", "import \"list\"\n\n_n: int\n_x: list.Range(0, _n, 1)\n", "_n: 300000000\n",
			"_x: list.Range would build 300000000 values"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := limitsRepo(t, tt.file, tt.other)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n%v\nwant it to hold\n%s", err, tt.want)
			}
		})
	}
}
