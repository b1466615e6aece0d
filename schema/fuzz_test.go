// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzLoad feeds arbitrary bytes to the loader as a fleet file. Whatever
// they are, Load must return, never panic, and place every error in a file.
func FuzzLoad(f *testing.F) {
	archives, _ := filepath.Glob("../testdata/specs/*.txtar")
	for _, name := range archives {
		ar, err := txtar.ParseFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if filepath.Dir(file.Name) == FleetsDir {
				f.Add(file.Data)
			}
		}
	}
	example, _ := os.ReadFile("../examples/fleet-repo/fleets/training.cue")
	f.Add(example)
	f.Add([]byte("package gpufleet\n\nfleets: x: {owner: \"\xff\"}"))
	f.Add([]byte("package gpufleet\n\nimport \"list\"\n\n_n: 3\n_r: list.Range(0, _n, 1)\nfleets: x: labels: {for i in _r for j in _r {\"l\\(i)\\(j)\": \"\\(i)\" * 2}}\n"))
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(minimalConfig), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, FleetsDir), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(filepath.Join(dir, FleetsDir, "f.cue"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		repo, err := Load(dir)
		if err == nil {
			if repo == nil {
				t.Fatal("no repository and no error")
			}
			return
		}
		errs, ok := err.(Errors)
		if !ok || len(errs) == 0 {
			t.Fatalf("Load returned %T %v, want Errors", err, err)
		}
		for _, e := range errs {
			if e.File == "" {
				t.Errorf("error without a file: %v", e)
			}
		}
	})
}
