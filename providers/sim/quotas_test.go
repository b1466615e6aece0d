// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

func quotaLimit(t *testing.T, w *World, cloud, region, name string) int {
	t.Helper()
	for _, q := range w.Quotas(cloud, region) {
		if q.Name == name {
			return q.Limit
		}
	}
	t.Fatalf("no quota %s/%s in %s", cloud, name, region)
	return 0
}

// A new account launches a few small GPU nodes and no large ones; a set's
// own limits replace its base, per region or in every region.
func TestANewAccountHasSmallQuotas(t *testing.T) {
	w, _ := newWorld(t, Config{})
	if err := w.SetQuotas(QuotaSet{Quotas: []QuotaLimit{
		{Cloud: catalog.AWS, Region: "us-west-2", Name: "L-417A185B", Limit: 192},
		{Cloud: catalog.GCP, Name: "NVIDIA_H100_GPUS", Limit: 8},
	}}); err != nil {
		t.Fatal(err)
	}
	aws := func(zone, typ, token string) error {
		_, err := w.Launch(LaunchSpec{Cloud: catalog.AWS, Zone: zone, InstanceType: typ, Market: catalog.OnDemand, Token: token})
		return err
	}
	var e *Error
	if err := aws("us-east-1a", "p5.48xlarge", "p5"); !errors.As(err, &e) || e.Kind != KindQuota || e.Quota != "L-417A185B" || e.Limit != 0 || e.Requested != 192 {
		t.Fatalf("p5.48xlarge in a new account's us-east-1: %v, want the P quota of 0 exceeded", err)
	}
	west, _ := w.Region(catalog.AWS, "us-west-2")
	launched := false
	for _, z := range west.Zones {
		if _, ok := w.Type(catalog.AWS, z, "p5.48xlarge", catalog.OnDemand); ok && !launched {
			if err := aws(z, "p5.48xlarge", "p5-west"); err != nil {
				t.Fatalf("p5.48xlarge where the P quota was raised to 192: %v", err)
			}
			launched = true
		}
	}
	if !launched {
		t.Fatal("no zone of us-west-2 sells p5.48xlarge")
	}
	// Eight G vCPUs: two g4dn.xlarge, not a third.
	for _, token := range []string{"g1", "g2"} {
		if err := aws("us-east-1a", "g4dn.xlarge", token); err != nil {
			t.Fatalf("g4dn.xlarge %s: %v", token, err)
		}
	}
	if err := aws("us-east-1a", "g4dn.xlarge", "g3"); !errors.As(err, &e) || e.Quota != "L-DB2E81BA" || e.Limit != 8 || e.Used != 8 {
		t.Fatalf("a third g4dn.xlarge: %v, want the G quota of 8 exceeded", err)
	}
	for _, c := range []struct {
		cloud, region, name string
		want                int
	}{
		{catalog.AWS, "us-west-2", "L-417A185B", 192},
		{catalog.AWS, "eu-west-1", "L-417A185B", 0},
		{catalog.Azure, "eastus", "cores", 10},
		{catalog.Azure, "eastus", "standardNDSH100v5Family", 0},
		{catalog.GCP, "us-central1", "NVIDIA_H100_GPUS", 8},
		{catalog.GCP, "europe-west4", "NVIDIA_H100_GPUS", 8},
		{catalog.GCP, "us-central1", "GPUS_ALL_REGIONS", 8},
		{catalog.GCP, "us-central1", "NVIDIA_L4_GPUS", 4},
	} {
		if got := quotaLimit(t, w, c.cloud, c.region, c.name); got != c.want {
			t.Errorf("%s %s in %s: limit %d, want %d", c.cloud, c.name, c.region, got, c.want)
		}
	}
	// SetQuotas replaces what was declared before, SetQuota changes one.
	if err := w.SetQuotas(QuotaSet{Base: NoLimits}); err != nil {
		t.Fatal(err)
	}
	w.SetQuota(catalog.Azure, "eastus", "cores", 12)
	if got := quotaLimit(t, w, catalog.AWS, "us-west-2", "L-417A185B"); got != Unlimited {
		t.Errorf("P quota after an unlimited set: %d", got)
	}
	if got := quotaLimit(t, w, catalog.Azure, "eastus", "cores"); got != 12 {
		t.Errorf("cores after SetQuota: %d", got)
	}
}

// The limits declared, and that they were, outlive a restart.
func TestDeclaredQuotasSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, _ := newWorld(t, Config{StatePath: path})
	if w.QuotasDeclared() {
		t.Fatal("a new world has declared quotas")
	}
	if err := w.SetQuotas(QuotaSet{Base: NoLimits, Quotas: []QuotaLimit{{Cloud: catalog.GCP, Name: "GPUS_ALL_REGIONS", Limit: 16}, {Cloud: catalog.AWS, Region: "us-east-1", Name: "L-417A185B", Limit: 384}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	again, _ := newWorld(t, Config{StatePath: path})
	if !again.QuotasDeclared() {
		t.Error("after a restart the quotas are no longer declared")
	}
	for _, c := range []struct {
		cloud, region, name string
		want                int
	}{{catalog.GCP, "us-east1", "GPUS_ALL_REGIONS", 16}, {catalog.AWS, "us-east-1", "L-417A185B", 384}, {catalog.AWS, "us-east-2", "L-417A185B", Unlimited}} {
		if got := quotaLimit(t, again, c.cloud, c.region, c.name); got != c.want {
			t.Errorf("%s %s in %s after a restart: %d, want %d", c.cloud, c.name, c.region, got, c.want)
		}
	}
}

// A quota file names the line a mistake is on, and what is wrong with it.
func TestQuotaFileMistakes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{"{\n  \"base\": \"new-account\",\n  \"quotas\": [\n    {\"cloud\": \"aws\", \"name\": \"L-417A185B\", \"limit\": \"lots\"}\n  ]\n}", "q.json:4: json: cannot unmarshal string"},
		{"{\n  \"quota\": []\n}", `q.json:2: json: unknown field "quota"`},
		{"{\"base\": \"generous\"}", `base "generous"`},
		{"{\"quotas\": [{\"cloud\": \"aws\", \"name\": \"L-NOPE\", \"limit\": 1}]}", `quotas[0]: aws has no quota "L-NOPE"`},
		{"{\"quotas\": [{\"cloud\": \"gcp\", \"region\": \"us-east1\", \"name\": \"GPUS_ALL_REGIONS\", \"limit\": 1}]}", "GPUS_ALL_REGIONS is global"},
		{"{\"quotas\": [{\"cloud\": \"aws\", \"region\": \"mars-1\", \"name\": \"L-417A185B\", \"limit\": 1}]}", `aws has no region "mars-1"`},
		{"{\"quotas\": [{\"cloud\": \"aws\", \"name\": \"L-417A185B\", \"limit\": -1}]}", "negative"},
		{"{\"quotas\": [{\"cloud\": \"aws\", \"name\": \"L-417A185B\", \"limit\": 1}, {\"cloud\": \"aws\", \"name\": \"L-417A185B\", \"limit\": 2}]}", "quotas[1]: repeats quotas[0]"},
		{"{}\n{}", "q.json:2: more than one JSON value"},
	} {
		path := filepath.Join(dir, "q.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadQuotas(path, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("quota file %q: %v, want an error naming %s and %q", c.body, err, path, c.want)
		}
	}
}
