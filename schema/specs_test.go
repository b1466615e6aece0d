// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// updateGolden rewrites expected outputs instead of comparing them.
var updateGolden = os.Getenv("GPUFLEET_UPDATE_GOLDEN") != ""

// TestInvalidSpecs loads every repository in testdata/specs and compares
// the errors, in full, with the archive's "want" section.
func TestInvalidSpecs(t *testing.T) {
	archives, err := filepath.Glob("../testdata/specs/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) < 30 {
		t.Fatalf("found %d invalid specs, want at least 30", len(archives))
	}
	for _, name := range archives {
		t.Run(strings.TrimSuffix(filepath.Base(name), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(name)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var want []byte
			wantAt := -1
			for i, f := range ar.Files {
				if f.Name == "want" {
					want, wantAt = f.Data, i
					continue
				}
				writeFile(t, filepath.Join(dir, f.Name), f.Data)
			}
			if wantAt < 0 {
				t.Fatal("archive has no want section")
			}
			repo, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded with %d fleets; want errors", len(repo.Fleets))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load returned %T, want Errors: %v", err, err)
			}
			got := []byte(errs.Error() + "\n")
			if updateGolden {
				ar.Files[wantAt].Data = got
				if err := os.WriteFile(name, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("errors differ\ngot:\n%s\nwant:\n%s", got, want)
			}
			for _, e := range errs {
				if e.File == "" {
					t.Errorf("error without a file: %v", e)
				}
			}
		})
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
