package main

import (
	"bytes"
	"testing"
)

// The exit statuses scripts and CI rely on; testscript tells only zero from
// non-zero.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"plan with changes", []string{"plan", "--repo", "../../examples/fleet-repo", "--detailed-exitcode"}, 2},
		{"plan with changes, no flag", []string{"plan", "--repo", "../../examples/fleet-repo"}, 0},
		{"plan with nothing to do", []string{"plan", "--repo", "../../examples/fleet-repo", "--observed", "../../testdata/observed/fleet-repo-converged.json", "--detailed-exitcode"}, 0},
		{"plan of a broken repository", []string{"plan", "--repo", "../../testdata", "--detailed-exitcode"}, 1},
		{"valid repository", []string{"validate", "--repo", "../../examples/fleet-repo"}, 0},
		{"not a repository", []string{"validate", "--repo", "../../testdata"}, 1},
		{"unknown command", []string{"frobnicate"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit status %d, want %d\nstderr: %s", got, tt.want, stderr.String())
			}
		})
	}
}
