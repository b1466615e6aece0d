// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestValidateInvalidSpecs runs `gpufleet validate` on every repository in
// testdata/specs: each must exit 1 and print exactly its expected errors.
func TestValidateInvalidSpecs(t *testing.T) {
	archives, err := filepath.Glob("../../testdata/specs/*.txtar")
	if err != nil || len(archives) == 0 {
		t.Fatalf("no specs found: %v", err)
	}
	for _, name := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(name), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var want []byte
			for _, f := range ar.Files {
				if f.Name == "want" {
					want = f.Data
					continue
				}
				path := filepath.Join(dir, f.Name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := Main([]string{"validate", "--repo", dir}, &stdout, &stderr)
			if code != 1 {
				t.Fatalf("exit status %d, want 1; stdout:\n%s", code, stdout.String())
			}
			lines := strings.SplitAfter(stderr.String(), "\n")
			got := strings.Join(lines[:len(lines)-2], "")
			if got != string(want) {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}
