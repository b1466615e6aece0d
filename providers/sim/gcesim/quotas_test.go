// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// regionQuotas reads a region's quotas through the SDK, by metric.
func (f *fixture) regionQuotas(t *testing.T, region string) map[string]*computepb.Quota {
	t.Helper()
	r, err := f.regions.Get(context.Background(), &computepb.GetRegionRequest{Project: project, Region: region})
	if err != nil {
		t.Fatalf("regions.get %s: %v", region, err)
	}
	return byMetric(t, r.GetQuotas())
}

// projectQuotas reads the project's quotas through the SDK, by metric.
func (f *fixture) projectQuotas(t *testing.T) map[string]*computepb.Quota {
	t.Helper()
	p, err := f.projects.Get(context.Background(), &computepb.GetProjectRequest{Project: project})
	if err != nil {
		t.Fatalf("projects.get: %v", err)
	}
	return byMetric(t, p.GetQuotas())
}

func byMetric(t *testing.T, quotas []*computepb.Quota) map[string]*computepb.Quota {
	t.Helper()
	out := map[string]*computepb.Quota{}
	for _, q := range quotas {
		if out[q.GetMetric()] != nil {
			t.Errorf("metric %s listed twice", q.GetMetric())
		}
		if q.Limit == nil || q.Usage == nil {
			t.Errorf("metric %s without a limit or usage: %v", q.GetMetric(), q)
		}
		out[q.GetMetric()] = q
	}
	return out
}

func TestQuotasFollowTheWorld(t *testing.T) {
	const unset = 1 << 20 // sim.Config's default limit
	f := newFixture(t, sim.Config{}, Options{})
	f.world.SetQuota("gcp", "us-central1", "NVIDIA_L4_GPUS", 8)
	f.world.SetQuota("gcp", "", "GPUS_ALL_REGIONS", 16)
	if got := f.regionQuotas(t, "us-central1")["NVIDIA_L4_GPUS"]; got.GetLimit() != 8 || got.GetUsage() != 0 {
		t.Errorf("before any launch: %v, want limit 8, usage 0", got)
	}
	f.create(t, vm{name: "one-l4"})
	f.create(t, vm{name: "four-l4", machineType: "g2-standard-48"})
	f.create(t, vm{name: "spot-l4", spot: true})
	f.create(t, vm{name: "eu-l4", zone: "europe-west4-a"})

	tests := []struct {
		name   string
		read   func(t *testing.T) map[string]*computepb.Quota
		metric string
		limit  float64
		usage  float64
	}{
		{"the region's L4s", func(t *testing.T) map[string]*computepb.Quota { return f.regionQuotas(t, "us-central1") }, "NVIDIA_L4_GPUS", 8, 5},
		{"the region's preemptible L4s", func(t *testing.T) map[string]*computepb.Quota { return f.regionQuotas(t, "us-central1") }, "PREEMPTIBLE_NVIDIA_L4_GPUS", unset, 1},
		{"a model nothing runs", func(t *testing.T) map[string]*computepb.Quota { return f.regionQuotas(t, "us-central1") }, "NVIDIA_H100_GPUS", unset, 0},
		{"another region", func(t *testing.T) map[string]*computepb.Quota { return f.regionQuotas(t, "europe-west4") }, "NVIDIA_L4_GPUS", unset, 1},
		{"every region's GPUs", f.projectQuotas, "GPUS_ALL_REGIONS", 16, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := tt.read(t)[tt.metric]
			if !ok {
				t.Fatalf("no %s", tt.metric)
			}
			if q.GetLimit() != tt.limit || q.GetUsage() != tt.usage {
				t.Errorf("limit %v, usage %v; want %v, %v", q.GetLimit(), q.GetUsage(), tt.limit, tt.usage)
			}
		})
	}
	if _, ok := f.regionQuotas(t, "us-central1")["GPUS_ALL_REGIONS"]; ok {
		t.Errorf("a region lists the project's GPUS_ALL_REGIONS")
	}
	if _, ok := f.projectQuotas(t)["NVIDIA_L4_GPUS"]; ok {
		t.Errorf("the project lists a regional quota")
	}
}

// TestQuotaExceededNamesTheLimitTheQuotasShow: a create over a quota fails
// its operation with GCE's QUOTA_EXCEEDED, and the quota read back shows
// the limit the message names and the use that reached it.
func TestQuotaExceededNamesTheLimitTheQuotasShow(t *testing.T) {
	tests := []struct {
		name    string
		region  string // "" for the project's
		metric  string
		message string
	}{
		{"regional", "us-central1", "NVIDIA_L4_GPUS", "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 1.0 in region us-central1."},
		{"global", "", "GPUS_ALL_REGIONS", "Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 1.0 globally."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			f.world.SetQuota("gcp", tt.region, tt.metric, 1)
			f.create(t, vm{name: "first"})
			ctx := context.Background()
			op, err := f.instances.Insert(ctx, vm{name: "second"}.request())
			if err != nil {
				t.Fatalf("the insert itself failed: %v", err)
			}
			if err := op.Wait(ctx); err == nil {
				t.Errorf("Wait succeeded on an operation over quota")
			}
			errs := op.Proto().GetError().GetErrors()
			if len(errs) != 1 || errs[0].GetCode() != "QUOTA_EXCEEDED" || errs[0].GetMessage() != tt.message {
				t.Fatalf("operation errors %v, want QUOTA_EXCEEDED %q", errs, tt.message)
			}
			quotas := f.projectQuotas(t)
			if tt.region != "" {
				quotas = f.regionQuotas(t, tt.region)
			}
			if q := quotas[tt.metric]; q.GetLimit() != 1 || q.GetUsage() != 1 {
				t.Errorf("%s reads %v, want limit 1, usage 1", tt.metric, q)
			}
		})
	}
}

// TestQuotaJSON checks the wire shapes against GCE's discovery document:
// 64-bit ids are strings, quota limits and usages numbers (a usage of 0
// included), a region's zones full URLs.
func TestQuotaJSON(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	tests := []struct {
		name, path string
		check      func(t *testing.T, body map[string]any)
	}{
		{"region", "/compute/v1/projects/gpufleet-test/regions/us-central1", func(t *testing.T, body map[string]any) {
			wantJSON(t, body, "kind", "compute#region")
			wantJSON(t, body, "name", "us-central1")
			wantJSON(t, body, "status", "UP")
			wantJSON(t, body, "selfLink", f.link("projects/gpufleet-test/regions/us-central1"))
			zones, _ := body["zones"].([]any)
			if len(zones) != 4 || zones[0] != f.zoneLink() {
				t.Errorf("zones %v", body["zones"])
			}
		}},
		{"project", "/compute/v1/projects/gpufleet-test", func(t *testing.T, body map[string]any) {
			wantJSON(t, body, "kind", "compute#project")
			wantJSON(t, body, "name", "gpufleet-test")
			wantJSON(t, body, "selfLink", f.link("projects/gpufleet-test"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := getJSON(t, f.url+tt.path)
			if _, ok := body["id"].(string); !ok {
				t.Errorf("id %v (%T) is not a string", body["id"], body["id"])
			}
			quotas, _ := body["quotas"].([]any)
			if len(quotas) == 0 {
				t.Fatalf("no quotas: %v", body)
			}
			for _, q := range quotas {
				q := q.(map[string]any)
				if _, ok := q["metric"].(string); !ok {
					t.Errorf("quota %v without a metric", q)
				}
				for _, field := range []string{"limit", "usage"} {
					if _, ok := q[field].(float64); !ok {
						t.Errorf("quota %v: %s is not a number", q, field)
					}
				}
			}
			tt.check(t, body)
		})
	}
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

func wantJSON(t *testing.T, body map[string]any, field string, want any) {
	t.Helper()
	if got := body[field]; got != want {
		t.Errorf("%s is %v (%T), want %v", field, got, got, want)
	}
}
