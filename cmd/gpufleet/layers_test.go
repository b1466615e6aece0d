// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gpufleet/gpufleet"

// layers are gpufleet's layers, top to bottom. A package may import its own
// layer and those below it, never one above: the planner knows nothing of
// clouds, the providers nothing of Git. The leaves every layer shares —
// the price catalog, atomic writes — sit in the lowest, schema, so that
// nothing needs to look up for them. examples is embedded data.
var layers = []string{"cmd", "reconcile", "providers", "planner", "schema", "examples"}

func layerOf(pkg string) (int, bool) {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return 0, false
	}
	top, _, _ := strings.Cut(rel, "/")
	for i, l := range layers {
		if l == top {
			return i, true
		}
	}
	return 0, false
}

// TestImportsRunDownTheLayers fails for every import, test imports
// included, that reaches a higher layer.
func TestImportsRunDownTheLayers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the packages with")
	}
	out, err := exec.Command(goTool, "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	packages := 0
	var problems []string
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		packages++
		from, ok := layerOf(p.ImportPath)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is in no layer: the top level is %v", p.ImportPath, layers))
			continue
		}
		for _, set := range []struct {
			kind    string
			imports []string
		}{{"imports", p.Imports}, {"test imports", p.TestImports}, {"external test imports", p.XTestImports}} {
			kind := set.kind
			for _, imp := range set.imports {
				if to, ok := layerOf(imp); ok && to < from {
					problems = append(problems, fmt.Sprintf("%s (layer %s) %s %s (layer %s), which is higher",
						strings.TrimPrefix(p.ImportPath, module+"/"), layers[from], kind, strings.TrimPrefix(imp, module+"/"), layers[to]))
				}
			}
		}
	}
	if packages < 10 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", packages)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
