// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A clone's .git holds its config, and with it any credential in the
// remote's URL: no file of the specs or a bootstrap may be read from
// there, however a symlink leads to it.
func TestNothingIsReadFromGitDir(t *testing.T) {
	const credential = "https://x-token:ghp_canary0123456789@github.com/acme/fleets"
	bootstrapSpec := "package gpufleet\n\nfleets: ray: {owner: \"ml\", workloads: w: {gpu: {model: \"L4\", perNode: 1}, nodes: 1, bootstrap: {file: \"bootstrap/join.sh\", format: \"script\"}}}\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"a bootstrap that is a symlink to .git/config", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "fleets", "ray.cue"), []byte(bootstrapSpec))
			mkdir(t, filepath.Join(dir, "bootstrap"))
			symlink(t, "../.git/config", filepath.Join(dir, "bootstrap", "join.sh"))
		}, "bootstrap/join.sh: refused: the file is a symlink to .git/config, inside .git"},
		{"a bootstrap under a directory that is a symlink to .git", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "fleets", "ray.cue"), []byte(bootstrapSpec))
			symlink(t, ".git", filepath.Join(dir, "bootstrap"))
			symlink(t, "config", filepath.Join(dir, ".git", "join.sh"))
		}, "bootstrap/join.sh: refused: the file is a symlink to .git/config, inside .git"},
		{"a bootstrap through a chain of symlinks", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "fleets", "ray.cue"), []byte(bootstrapSpec))
			mkdir(t, filepath.Join(dir, "bootstrap"))
			mkdir(t, filepath.Join(dir, "shared"))
			symlink(t, "../shared/join.sh", filepath.Join(dir, "bootstrap", "join.sh"))
			symlink(t, "../.GIT/./config", filepath.Join(dir, "shared", "join.sh"))
			symlink(t, ".git", filepath.Join(dir, ".GIT"))
		}, "inside .git"},
		{"a spec file that is a symlink to .git/config", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "fleets"))
			symlink(t, "../.git/config", filepath.Join(dir, "fleets", "team.cue"))
		}, "fleets/team.cue: refused: the file is a symlink to .git/config, inside .git"},
		{"a symlink loop", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "fleets", "ray.cue"), []byte(bootstrapSpec))
			mkdir(t, filepath.Join(dir, "bootstrap"))
			symlink(t, "join.sh", filepath.Join(dir, "bootstrap", "join.sh"))
		}, "refused: more than 40 symlinks lead to the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := minimalRepo(t)
			writeFile(t, filepath.Join(dir, ".git", "config"), []byte("[remote \"origin\"]\n\turl = "+credential+"\n"))
			tt.setup(t, dir)
			got := loadErrors(t, dir)
			if !strings.Contains(got, tt.want) {
				t.Errorf("errors:\n%s\nwant one with %q", got, tt.want)
			}
			if strings.Contains(got, "canary") {
				t.Errorf("the error quotes the clone's config: %s", got)
			}
		})
	}
}

// What a load read is recorded by name, with where a symlink led and a
// digest of what it held: what a saved plan binds.
func TestLoadRecordsWhatItRead(t *testing.T) {
	dir := minimalRepo(t)
	writeFile(t, filepath.Join(dir, "fleets", "ray.cue"), []byte("package gpufleet\n\nfleets: ray: {owner: \"ml\", workloads: w: {gpu: {model: \"L4\", perNode: 1}, nodes: 1, bootstrap: {file: \"bootstrap/join.sh\", format: \"script\"}}}\n"))
	writeFile(t, filepath.Join(dir, "shared", "join.sh"), []byte("#!/bin/sh\necho {{.Zone}}\n"))
	mkdir(t, filepath.Join(dir, "bootstrap"))
	symlink(t, "../shared/join.sh", filepath.Join(dir, "bootstrap", "join.sh"))
	repo, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range repo.Read {
		names = append(names, f.Name+"→"+f.Path())
		if len(f.SHA256) != 64 {
			t.Errorf("%s: digest %q", f.Name, f.SHA256)
		}
	}
	if got, want := strings.Join(names, " "), "bootstrap/join.sh→shared/join.sh fleets/ray.cue→fleets/ray.cue gpufleet.cue→gpufleet.cue"; got != want {
		t.Errorf("read %s, want %s", got, want)
	}
	os.WriteFile(filepath.Join(dir, "shared", "join.sh"), []byte("#!/bin/sh\necho {{.Region}}\n"), 0o644)
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Read[0].SHA256 == repo.Read[0].SHA256 {
		t.Error("a changed bootstrap kept its digest")
	}
}
