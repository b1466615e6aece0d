// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
)

// cueVet does what `cue vet -c schema.cue gpufleet.cue fleets/*.cue
// policy/*.cue` does, with the cue library's own loader: it resolves
// gpufleet.dev/schema through the repository's cue.mod, not through
// gpufleet's loader.
func cueVet(t *testing.T, dir string) error {
	t.Helper()
	args := []string{"schema.cue", "gpufleet.cue"}
	for _, sub := range []string{"fleets", "policy"} {
		matches, err := filepath.Glob(filepath.Join(dir, sub, "*.cue"))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(matches)
		for _, m := range matches {
			rel, _ := filepath.Rel(dir, m)
			args = append(args, rel)
		}
	}
	insts := load.Instances(args, &load.Config{Dir: dir})
	if len(insts) != 1 {
		t.Fatalf("cue loaded %d instances, want 1", len(insts))
	}
	if insts[0].Err != nil {
		return insts[0].Err
	}
	v := cuecontext.New().BuildInstance(insts[0])
	if err := v.Err(); err != nil {
		return err
	}
	return v.Validate(cue.Concrete(true))
}

func TestCueVetAcceptsTheExample(t *testing.T) {
	if err := cueVet(t, exampleRepo); err != nil {
		t.Fatalf("cue vet rejects the example repository: %v", err)
	}
}

func TestCueVetRejectsAWrongType(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(exampleRepo)); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "fleets", "training.cue")
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(src, []byte("nodes: 4"), []byte(`nodes: "four"`), 1)
	if bytes.Equal(bad, src) {
		t.Fatal("the example no longer has `nodes: 4` to break")
	}
	writeFile(t, name, bad)
	err = cueVet(t, dir)
	if err == nil {
		t.Fatal("cue vet accepted nodes: \"four\"")
	}
	if msg := err.Error(); !strings.Contains(msg, "fleets.training.workloads.pretrain.nodes") || !strings.Contains(msg, "mismatched types string and int") {
		t.Errorf("cue vet error = %q, want it to name the field and the types", msg)
	}
}

// The example's vendored schema must be the one gpufleet embeds, or `cue
// vet` and gpufleet would disagree.
func TestVendoredSchemaIsCurrent(t *testing.T) {
	vendored, err := os.ReadFile(filepath.Join(exampleRepo, "cue.mod", "pkg", filepath.FromSlash(ImportPath), "schema.cue"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vendored, Source()) {
		t.Error("examples/fleet-repo vendors an old schema: run `go run ./cmd/gpufleet schema vendor --repo examples/fleet-repo`")
	}
}
