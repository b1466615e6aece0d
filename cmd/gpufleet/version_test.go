// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime/debug"
	"testing"
)

// A binary says what it was built as: the release's version, else the
// module version Go derives from the VCS, else devel; a tree with changes
// not committed says so in the version, a release's too.
func TestTheBuildSaysWhatItWasBuiltAs(t *testing.T) {
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/gpufleet/gpufleet", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: modified}}}
	}
	stamped := vcs("false")
	stamped.Main.Version = "v0.0.0-20261202052155-0123456789ab"
	tests := []struct {
		name    string
		release string
		info    *debug.BuildInfo
		ok      bool
		want    string
		dirty   bool
	}{
		{"a release from a clean tree", "v1.2.3", vcs("false"), true, "v1.2.3", false},
		{"a release from a dirty tree", "v1.2.3", vcs("true"), true, "v1.2.3+dirty", true},
		{"a module version Go stamped", "", stamped, true, "v0.0.0-20261202052155-0123456789ab", false},
		{"a checkout without a version", "", vcs("true"), true, "devel+dirty", true},
		{"no build info", "", nil, false, "devel", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildOf(tt.release, tt.info, tt.ok)
			if b.Version != tt.want || b.Dirty != tt.dirty {
				t.Errorf("version %q, dirty %v; want %q, %v", b.Version, b.Dirty, tt.want, tt.dirty)
			}
			if tt.ok && b.Revision != "0123456789abcdef0123456789abcdef01234567" {
				t.Errorf("revision %q", b.Revision)
			}
		})
	}
}
