// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A region that only a refreshed catalog has — one the embedded snapshot
// does not know — is one specs may name: validate and plan check the specs
// against the catalog they price with.
func TestARegionOnlyTheRefreshedCatalogHasValidatesAndPlans(t *testing.T) {
	dir := t.TempDir()
	const region = "mx-central-1"
	if _, ok := catalog.Default().Region(catalog.AWS, region); ok {
		t.Fatalf("the embedded catalog has %s: pick a region it lacks", region)
	}
	cat := catalog.Default()
	cat.Regions = append(cat.Regions, catalog.Region{Cloud: catalog.AWS, Name: region, Geo: "us", Country: "MX", Zones: []string{region + "a"}})
	cat.Offers = append(cat.Offers, catalog.Offer{Cloud: catalog.AWS, Region: region, InstanceType: "g4dn.xlarge", Market: catalog.OnDemand,
		GPUModel: "T4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 612000})
	var buf bytes.Buffer
	if err := cat.Write(&buf); err != nil {
		t.Fatal(err)
	}
	catFile := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	writeFiles(t, repo, map[string]string{
		"gpufleet.cue": "package gpufleet\n\ngpufleet: clouds: aws: regions: [\"" + region + "\"]\n",
		"fleets/f.cue": "package gpufleet\n\nfleets: f: {owner: \"me\", workloads: w: {gpu: {model: \"T4\", perNode: 1}, nodes: 1, placement: regions: allow: [\"country:mx\"]}}\n",
	})
	var out bytes.Buffer
	if code := run(context.Background(), []string{"plan", "--repo", repo, "--catalog", catFile}, &out, &out); code != 0 || !strings.Contains(out.String(), "aws    "+region) {
		t.Fatalf("plan with the refreshed catalog exited %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"plan", "--repo", repo}, &out, &out); code != 1 || !strings.Contains(out.String(), `unknown aws region "`+region+`"`) {
		t.Errorf("plan with the embedded catalog exited %d:\n%s", code, out.String())
	}
}
