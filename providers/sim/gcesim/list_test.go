// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// listNames lists through the SDK's iterator and returns the instance
// names in the order received.
func listNames(t *testing.T, f *fixture, req *computepb.AggregatedListInstancesRequest) ([]string, error) {
	t.Helper()
	var names []string
	it := f.instances.AggregatedList(context.Background(), req)
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return names, nil
		}
		if err != nil {
			return names, err
		}
		for _, inst := range pair.Value.GetInstances() {
			if want := "zones/" + lastSegment(inst.GetZone()); pair.Key != want {
				t.Errorf("instance %s of %s listed under %s", inst.GetName(), inst.GetZone(), pair.Key)
			}
			names = append(names, inst.GetName())
		}
	}
}

func lastSegment(url string) string { return url[strings.LastIndex(url, "/")+1:] }

func TestAggregatedListPagesOverManyInstances(t *testing.T) {
	const labelled = 1001
	f := newFixture(t, sim.Config{Capacity: 2000}, Options{})
	ctx := context.Background()
	zones := []string{"us-central1-a", "us-central1-b", "us-central1-c"}
	for i := range labelled {
		req := vm{name: fmt.Sprintf("node-%04d", i), zone: zones[i%len(zones)], labels: map[string]string{"gpufleet-fleet": "demo"}}.request()
		if _, err := f.instances.Insert(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// Someone else's VM in the same project: gpufleet must never see it.
	if _, err := f.instances.Insert(ctx, vm{name: "not-ours", labels: map[string]string{"team": "web"}}.request()); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		filter    string
		pageSize  uint32
		wantCount int
	}{
		{"label filter, quoted", `labels.gpufleet-fleet = "demo"`, 50, labelled},
		{"label presence", `labels.gpufleet-fleet:*`, 97, labelled},
		{"no filter", "", 400, labelled + 1},
		{"default page size", `labels.gpufleet-fleet = demo`, 0, labelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.calls(OpAggregatedList)
			req := &computepb.AggregatedListInstancesRequest{Project: project}
			if tt.filter != "" {
				req.Filter = proto.String(tt.filter)
			}
			if tt.pageSize > 0 {
				req.MaxResults = proto.Uint32(tt.pageSize)
			}
			names, err := listNames(t, f, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tt.wantCount {
				t.Errorf("listed %d instances, want %d", len(names), tt.wantCount)
			}
			if unique := len(slices.Compact(slices.Sorted(slices.Values(names)))); unique != len(names) {
				t.Errorf("%d of %d names are unique", unique, len(names))
			}
			if tt.filter != "" && slices.Contains(names, "not-ours") {
				t.Errorf("the label filter let an unlabelled instance through")
			}
			size := int(tt.pageSize)
			if size == 0 {
				size = maxResults
			}
			wantPages := (tt.wantCount + size - 1) / size
			if pages := f.calls(OpAggregatedList) - before; pages != wantPages || pages < 2 {
				t.Errorf("fetched %d pages, want %d (more than one)", pages, wantPages)
			}
		})
	}

	t.Run("a page token always resumes at the same place", func(t *testing.T) {
		req := &computepb.AggregatedListInstancesRequest{Project: project, Filter: proto.String(`labels.gpufleet-fleet = "demo"`)}
		it := f.instances.AggregatedList(ctx, req)
		_, token, err := it.InternalFetch(100, "")
		if err != nil || token == "" {
			t.Fatalf("first page: token %q, %v", token, err)
		}
		page := func() []string {
			pairs, _, err := it.InternalFetch(100, token)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pairs {
				for _, inst := range p.Value.GetInstances() {
					names = append(names, inst.GetName())
				}
			}
			return names
		}
		first := page()
		// An instance created behind the cursor must not shift the page.
		if _, err := f.instances.Insert(ctx, vm{name: "aaa-late", labels: map[string]string{"gpufleet-fleet": "demo"}}.request()); err != nil {
			t.Fatal(err)
		}
		if again := page(); !slices.Equal(first, again) || len(first) != 100 {
			t.Errorf("the same token gave %d then %d different names", len(first), len(again))
		}
	})
}

func TestAggregatedListFilters(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "a", labels: map[string]string{"gpufleet-fleet": "demo", "env": "prod"}})
	f.create(t, vm{name: "b", zone: "europe-west4-a", labels: map[string]string{"gpufleet-fleet": "demo", "env": "dev"}})
	f.create(t, vm{name: "c", labels: map[string]string{"gpufleet-fleet": "other"}})
	f.create(t, vm{name: "d", spot: true, terminationAction: "DELETE", labels: map[string]string{"gpufleet-fleet": "demo"}})
	f.create(t, vm{name: "plain"})
	if err := f.world.Preempt(f.world.List("gcp", func(i *sim.Instance) bool { return i.Name == "d" })[0].ID); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		filter string
		want   []string
	}{
		{`labels.gpufleet-fleet = "demo"`, []string{"b", "a", "d"}},
		{`labels.gpufleet-fleet = demo`, []string{"b", "a", "d"}},
		{`labels.gpufleet-fleet:*`, []string{"b", "a", "c", "d"}},
		{`labels.gpufleet-fleet = "demo" AND labels.env = "prod"`, []string{"a"}},
		{`labels.gpufleet-fleet = "demo" labels.env = "dev"`, []string{"b"}},
		{`(labels.gpufleet-fleet = "demo") AND (status = RUNNING)`, []string{"b", "a"}},
		{`status = TERMINATED`, []string{"d"}},
		{`labels.gpufleet-fleet != "demo"`, []string{"c", "plain"}},
		{`name = plain`, []string{"plain"}},
		{`name = "nobody"`, nil},
		{`((labels.env:*) name = "a")`, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			got, err := listNames(t, f, &computepb.AggregatedListInstancesRequest{Project: project, Filter: proto.String(tt.filter)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
		})
	}

	invalid := []string{
		`labels.env = "prod" OR labels.env = "dev"`,
		`zone = us-central1-a`,
		`labels.env eq prod`,
		`labels.env:prod`,
		`labels.Env = prod`,
		`(labels.env = prod`,
		`labels.env = prod)`,
		`labels.env = "prod`,
		`labels.env =`,
		`AND labels.env = prod`,
		`labels.env = prod AND`,
		`name = a*`,
		`NOT name = a`,
		`labels.env = =`,
		`()`,
	}
	for _, expr := range invalid {
		t.Run("invalid "+expr, func(t *testing.T) {
			_, err := listNames(t, f, &computepb.AggregatedListInstancesRequest{Project: project, Filter: proto.String(expr)})
			wantAPIError(t, err, 400, "invalid", "Invalid value for field 'filter': '"+expr+"'. Invalid list filter expression.")
		})
	}
}

func TestAggregatedListScopes(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "only"})
	it := f.instances.AggregatedList(context.Background(), &computepb.AggregatedListInstancesRequest{Project: project})
	var pairs []compute.InstancesScopedListPair
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, pair)
	}
	zones := 0
	for _, r := range f.world.Catalog().RegionsOf("gcp") {
		zones += len(r.Zones)
	}
	if len(pairs) != zones {
		t.Errorf("%d scopes, want one per zone (%d)", len(pairs), zones)
	}
	for _, p := range pairs {
		switch {
		case p.Key == "zones/"+zone:
			if len(p.Value.GetInstances()) != 1 || p.Value.Warning != nil {
				t.Errorf("scope %s: %v", p.Key, p.Value)
			}
		case p.Value.GetWarning().GetCode() != "NO_RESULTS_ON_PAGE" || p.Value.GetWarning().GetData()[0].GetValue() != p.Key:
			t.Errorf("empty scope %s has warning %v", p.Key, p.Value.GetWarning())
		}
	}
	if it.Response.(*computepb.InstanceAggregatedList).NextPageToken != nil {
		t.Errorf("a single page has a next page token")
	}
}

func TestAggregatedListOtherProject(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "mine"})
	names, err := listNames(t, f, &computepb.AggregatedListInstancesRequest{Project: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("another project lists %v", names)
	}
}

// instances.list serves one zone: only its instances, filtered and paged as
// aggregatedList is, and a zone that does not exist is a 404.
func TestZoneListServesOneZone(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	for i := range 5 {
		zone := "us-central1-a"
		if i%2 == 1 {
			zone = "us-central1-b"
		}
		f.create(t, vm{name: fmt.Sprintf("node-%d", i), zone: zone, labels: map[string]string{"gpufleet-token": fmt.Sprintf("t%d", i%3)}})
	}
	list := func(zone, filter string, page uint32) ([]string, error) {
		req := &computepb.ListInstancesRequest{Project: project, Zone: zone, MaxResults: proto.Uint32(page)}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		var names []string
		it := f.instances.List(ctx, req)
		for {
			inst, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return names, nil
			}
			if err != nil {
				return names, err
			}
			if lastSegment(inst.GetZone()) != zone {
				t.Errorf("%s of %s listed in %s", inst.GetName(), inst.GetZone(), zone)
			}
			names = append(names, inst.GetName())
		}
	}
	got, err := list("us-central1-a", "", 2)
	if err != nil || !slices.Equal(got, []string{"node-0", "node-2", "node-4"}) {
		t.Errorf("us-central1-a in pages of 2: %v, %v", got, err)
	}
	got, err = list("us-central1-a", `labels.gpufleet-token = "t0"`, 500)
	if err != nil || !slices.Equal(got, []string{"node-0"}) {
		t.Errorf("filtered on the token label: %v, %v", got, err)
	}
	_, err = list("us-central1-z", "", 500)
	wantAPIError(t, err, 404, "notFound", "")
}
