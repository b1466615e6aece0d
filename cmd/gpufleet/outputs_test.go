// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every JSON output gpufleet writes, produced for real, passes the schema
// `gpufleet schema json KIND` publishes for it, as an independent
// validator (santhosh-tekuri/jsonschema) checks it; and each kind is
// covered.
func TestEveryJSONOutputMatchesItsSchema(t *testing.T) {
	dir := t.TempDir()
	repo, _ := exampleCheckout(t, dir)
	state := filepath.Join(dir, "clouds.json")
	broken := filepath.Join(dir, "broken")
	os.MkdirAll(filepath.Join(broken, "fleets"), 0o755)
	os.WriteFile(filepath.Join(broken, "gpufleet.cue"), []byte("package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\n"), 0o644)
	os.WriteFile(filepath.Join(broken, "fleets", "a.cue"), []byte("package gpufleet\n\nfleets: a: {owner: \"x\", workloads: w: {gpu: {model: \"L4\", perNode: 1}, nodes: -1}}\n"), 0o644)
	saved := filepath.Join(dir, "plan.json")

	runs := []struct {
		kind string
		args []string
		file string // the output is this file rather than stdout
	}{
		{kind: "run", args: []string{"reconcile", "--repo", repo, "--sim", "--sim-state", state, "-o", "json"}},
		{kind: "plan", args: []string{"plan", "--repo", repo, "-o", "json"}},
		{kind: "saved-plan", args: []string{"plan", "--repo", repo, "-out", saved}, file: saved},
		{kind: "run", args: []string{"apply", saved, "--repo", repo, "--sim", "--sim-state", state, "-o", "json"}},
		{kind: "review", args: []string{"plan", "--repo", repo, "--base", "HEAD~1", "-o", "json"}},
		{kind: "validation", args: []string{"validate", "--repo", repo, "-o", "json"}},
		{kind: "validation", args: []string{"validate", "--repo", broken, "-o", "json"}},
		{kind: "catalog", args: []string{"catalog", "show", "-o", "json"}},
		{kind: "backtest", args: []string{"backtest", "--repo", repo, "--history", "../../examples/price-history.json", "--to", "2026-11-03T00:00:00Z", "--set", "defaults.migrationThreshold=0.2", "-o", "json"}},
		{kind: "capacity", args: []string{"capacity", "--repo", repo, "--sim", "--sim-state", state, "-o", "json"}},
		{kind: "status", args: []string{"status", "--repo", repo, "-o", "json"}},
		{kind: "drift", args: []string{"drift", "--repo", repo, "--sim", "--sim-state", state, "-o", "json"}},
		{kind: "emulator", args: []string{"sim", "inspect", "--state", state, "-o", "json"}},
		{kind: "version", args: []string{"version", "-o", "json"}},
		{kind: "adoption", args: []string{"adopt", "--repo", repo, "--sim", "--sim-state", state, "--fleet", "inference", "--workload", "chat", "--selector", "team=nobody", "-o", "json"}},
		{kind: "error", args: []string{"plan", "--repo", broken, "-o", "json"}},
		{kind: "error", args: []string{"status", "--repo", filepath.Join(dir, "nowhere"), "-o", "json"}},
		{kind: "observed", file: "../../testdata/observed/fleet-repo-converged.json"},
	}
	schemas := map[string]*jsonschema.Schema{}
	covered := map[string]bool{}
	for _, r := range runs {
		t.Run(r.kind+" "+strings.Join(r.args, " "), func(t *testing.T) {
			sch, ok := schemas[r.kind]
			if !ok {
				sch = compileSchema(t, r.kind)
				schemas[r.kind] = sch
			}
			var out []byte
			if r.args != nil {
				var stdout, stderr bytes.Buffer
				run(context.Background(), r.args, &stdout, &stderr)
				out = stdout.Bytes()
			}
			if r.file != "" {
				var err error
				if out, err = os.ReadFile(r.file); err != nil {
					t.Fatal(err)
				}
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if err := sch.Validate(doc); err != nil {
				t.Fatalf("the %s output does not match its schema: %v", r.kind, err)
			}
			covered[r.kind] = true
		})
	}
	for _, o := range jsonOutputs {
		if !covered[o.kind] {
			t.Errorf("no real %s output was checked against its schema", o.kind)
		}
	}
}

// The schemas catch what they are for: a field gpufleet does not write,
// a missing one, a wrong type, another format version.
func TestSchemasRefuseWhatGpufleetDoesNotWrite(t *testing.T) {
	sch := compileSchema(t, "status")
	good := `{"formatVersion": 1, "kind": "status", "repo": ".", "fleets": []}`
	for name, doc := range map[string]string{
		"an unknown field": `{"formatVersion": 1, "kind": "status", "repo": ".", "fleets": [], "extra": 1}`,
		"a missing field":  `{"formatVersion": 1, "kind": "status", "fleets": []}`,
		"a wrong type":     `{"formatVersion": 1, "kind": "status", "repo": 3, "fleets": []}`,
		"another version":  `{"formatVersion": 2, "kind": "status", "repo": ".", "fleets": []}`,
		"another kind":     `{"formatVersion": 1, "kind": "plan", "repo": ".", "fleets": []}`,
		"a Go-named field": `{"formatVersion": 1, "kind": "status", "Repo": ".", "fleets": []}`,
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if sch.Validate(v) == nil {
			t.Errorf("%s passed", name)
		}
	}
	v, _ := jsonschema.UnmarshalJSON(strings.NewReader(good))
	if err := sch.Validate(v); err != nil {
		t.Errorf("a good status failed: %v", err)
	}
}

// Every field of every output is lowerCamel, as JSON APIs are.
func TestJSONOutputsNameFieldsInLowerCamel(t *testing.T) {
	lowerCamel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	for _, o := range jsonOutputs {
		var stdout bytes.Buffer
		if code := run(context.Background(), []string{"schema", "json", o.kind}, &stdout, &bytes.Buffer{}); code != 0 {
			t.Fatalf("schema json %s: exit %d", o.kind, code)
		}
		var doc any
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var bad []string
		var walk func(v any, path string)
		walk = func(v any, path string) {
			switch v := v.(type) {
			case map[string]any:
				if props, ok := v["properties"].(map[string]any); ok {
					for name := range props {
						if !lowerCamel.MatchString(name) {
							bad = append(bad, path+"."+name)
						}
					}
				}
				for k, c := range v {
					walk(c, path+"/"+k)
				}
			case []any:
				for _, c := range v {
					walk(c, path)
				}
			}
		}
		walk(doc, o.kind)
		slices.Sort(bad)
		if len(bad) > 0 {
			t.Errorf("%s: fields not in lowerCamel: %v", o.kind, bad)
		}
	}
}

func compileSchema(t *testing.T, kind string) *jsonschema.Schema {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"schema", "json", kind}, &stdout, &stderr); code != 0 {
		t.Fatalf("schema json %s: exit %d: %s", kind, code, stderr.String())
	}
	doc, err := jsonschema.UnmarshalJSON(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := "https://gpufleet.dev/schema/" + kind + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("the %s schema does not compile: %v", kind, err)
	}
	return sch
}
