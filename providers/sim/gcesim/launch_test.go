// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// secret marks metadata values, so a test can tell whether an error
// quotes one.
const secret = "canary-secret-4711"

func items(kv ...string) *computepb.Metadata {
	md := &computepb.Metadata{}
	for i := 0; i+1 < len(kv); i += 2 {
		md.Items = append(md.Items, &computepb.Items{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return md
}

// value is n bytes of metadata value that hold the secret.
func value(n int) string {
	return secret + strings.Repeat("x", n-len(secret))
}

// wantNoValue asserts that an error quotes no metadata value.
func wantNoValue(t *testing.T, err error) {
	t.Helper()
	var gerr *googleapi.Error
	if errors.As(err, &gerr) && (strings.Contains(gerr.Message, secret) || strings.Contains(string(gerr.Body), secret)) {
		t.Errorf("the error quotes a metadata value: %.300s", gerr.Message)
	}
}

// An instance keeps its metadata, items in order, and returns it from get
// and from listings, with a fingerprint that follows the content.
func TestMetadataIsKeptAndReturned(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	mds := map[string]*computepb.Metadata{
		"with-data": items("user-data", "#cloud-config\n"+secret, "enable-oslogin", "TRUE"),
		"same-data": items("user-data", "#cloud-config\n"+secret, "enable-oslogin", "TRUE"),
		"other":     items("startup-script", "#!/bin/sh\necho hi"),
		"none":      nil,
	}
	for name, md := range mds {
		req := vm{name: name}.request()
		req.InstanceResource.Metadata = md
		op, err := f.instances.Insert(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]*computepb.Metadata{}
	for name := range mds {
		got[name] = f.get(t, zone, name).GetMetadata()
	}
	for name, md := range mds {
		g := got[name]
		if g.GetKind() != "compute#metadata" || g.GetFingerprint() == "" {
			t.Errorf("%s: metadata kind %q fingerprint %q", name, g.GetKind(), g.GetFingerprint())
		}
		if len(g.GetItems()) != len(md.GetItems()) {
			t.Fatalf("%s: %d items, want %d", name, len(g.GetItems()), len(md.GetItems()))
		}
		for i, item := range md.GetItems() {
			if g.GetItems()[i].GetKey() != item.GetKey() || g.GetItems()[i].GetValue() != item.GetValue() {
				t.Errorf("%s: item %d is %s, want %s", name, i, g.GetItems()[i].GetKey(), item.GetKey())
			}
		}
	}
	if got["with-data"].GetFingerprint() != got["same-data"].GetFingerprint() || got["with-data"].GetFingerprint() == got["other"].GetFingerprint() {
		t.Errorf("fingerprints %q %q %q: want equal for equal metadata only", got["with-data"].GetFingerprint(), got["same-data"].GetFingerprint(), got["other"].GetFingerprint())
	}

	it := f.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{Project: project})
	listed := 0
	for {
		pair, err := it.Next()
		if err != nil {
			break
		}
		for _, inst := range pair.Value.GetInstances() {
			listed++
			if !proto.Equal(inst.GetMetadata(), got[inst.GetName()]) {
				t.Errorf("%s lists with other metadata than get returns", inst.GetName())
			}
		}
	}
	if listed != len(mds) {
		t.Errorf("listed %d, want %d", listed, len(mds))
	}
}

// GCE's limits: a value of at most 256 KiB, at most 512 KiB of keys and
// values in all, keys unique and of its alphabet. A refusal names the
// field and the limit, never the value, and creates nothing.
func TestMetadataLimits(t *testing.T) {
	const field = "resource.metadata"
	tests := []struct {
		name    string
		md      *computepb.Metadata
		message string
	}{
		{"value over 256 KiB", items("enable-oslogin", "TRUE", "user-data", value(256<<10+1)),
			"Value for field 'resource.metadata.items[1].value' is too large: maximum size 262144 character(s); actual size 262145."},
		{"total over 512 KiB", items("a", value(200<<10), "b", value(200<<10), "c", value(200<<10)),
			fmt.Sprintf("Value for field 'resource.metadata' is too large: maximum size 524288 character(s); actual size %d.", 3+3*200<<10)},
		{"duplicate key", items("user-data", secret, "user-data", secret),
			"Invalid value for field 'resource.metadata.items[1].key': 'user-data'. Metadata keys must be unique."},
		{"bad key", items("user data", secret),
			"Invalid value for field 'resource.metadata.items[0].key': 'user data'. Must be a match of regex '[a-zA-Z0-9-_]{1,128}'"},
		{"long key", items(strings.Repeat("k", 128), secret),
			"Invalid value for field 'resource.metadata.items[0].key': '" + strings.Repeat("k", 128) + "'. Must be a match of regex '[a-zA-Z0-9-_]{1,128}'"},
		{"no key", &computepb.Metadata{Items: []*computepb.Items{{Value: proto.String(secret)}}},
			"Required field 'resource.metadata.items[0].key' not specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{}, Options{})
			ctx := context.Background()
			req := vm{name: "big"}.request()
			req.InstanceResource.Metadata = tt.md
			_, err := f.instances.Insert(ctx, req)
			reason := "invalid"
			if tt.name == "no key" {
				reason = "required"
			}
			wantAPIError(t, err, http.StatusBadRequest, reason, tt.message)
			wantNoValue(t, err)

			// bulkInsert names the fields under its instance properties.
			b := batch{names: []string{"b-0", "b-1"}, count: 2}.request()
			b.BulkInsertInstanceResourceResource.InstanceProperties.Metadata = tt.md
			_, err = f.instances.BulkInsert(ctx, b)
			wantAPIError(t, err, http.StatusBadRequest, reason, strings.Replace(tt.message, field, bulkProps+".metadata", 1))
			wantNoValue(t, err)
			if n := len(f.world.List(cloud, nil)); n != 0 {
				t.Errorf("%d instances after refusals, want none", n)
			}
		})
	}
}

// The limits are inclusive: a value of 256 KiB and metadata of 512 KiB go.
func TestMetadataAtTheLimits(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	v := value(256<<10 - 1)
	md := items("a", v, "b", v)
	req := vm{name: "full"}.request()
	req.InstanceResource.Metadata = md
	op, err := f.instances.Insert(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := f.get(t, zone, "full").GetMetadata().GetItems()
	if len(got) != 2 || got[0].GetValue() != v || got[1].GetValue() != v {
		t.Errorf("metadata at the limits came back other than sent")
	}
}

// Every node of a bulkInsert gets the metadata, service account and
// access config of the instance properties.
func TestBulkInsertCarriesTheSettings(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	if err := f.world.SetAccount(sim.Account{ServiceAccounts: []string{"nodes@gpufleet-test.iam.gserviceaccount.com"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := batch{names: []string{"n-0", "n-1", "n-2"}, count: 3}.request()
	props := req.BulkInsertInstanceResourceResource.InstanceProperties
	props.Metadata = items("user-data", "#cloud-config\n"+secret)
	props.NetworkInterfaces[0].AccessConfigs = []*computepb.AccessConfig{{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}}
	props.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String("nodes@gpufleet-test.iam.gserviceaccount.com"), Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}}}
	props.Disks[0].InitializeParams.DiskType = proto.String("pd-ssd")
	op, err := f.instances.BulkInsert(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ips := map[string]bool{}
	for _, name := range []string{"n-0", "n-1", "n-2"} {
		inst := f.get(t, zone, name)
		if md := inst.GetMetadata().GetItems(); len(md) != 1 || md[0].GetKey() != "user-data" || !strings.Contains(md[0].GetValue(), secret) {
			t.Errorf("%s: metadata %d items", name, len(md))
		}
		if sa := inst.GetServiceAccounts(); len(sa) != 1 || sa[0].GetEmail() != "nodes@gpufleet-test.iam.gserviceaccount.com" {
			t.Errorf("%s: service accounts %v", name, sa)
		}
		nic := inst.GetNetworkInterfaces()[0]
		ac := nic.GetAccessConfigs()
		if len(ac) != 1 || ac[0].GetNatIP() == "" || ips[ac[0].GetNatIP()] {
			t.Errorf("%s: access configs %v, want one with an address of its own", name, ac)
		} else {
			ips[ac[0].GetNatIP()] = true
		}
		if disk := f.disk(t, name); !strings.HasSuffix(disk.GetType(), "/diskTypes/pd-ssd") {
			t.Errorf("%s: disk type %q", name, disk.GetType())
		}
	}
}

func (f *fixture) disk(t *testing.T, name string) *computepb.Disk {
	t.Helper()
	disk, err := f.disks.Get(context.Background(), &computepb.GetDiskRequest{Project: project, Zone: zone, Disk: name})
	if err != nil {
		t.Fatalf("getting disk %s: %v", name, err)
	}
	return disk
}

// Service accounts: "default" is the project's default one; any other
// must be one the project has; an instance runs as one at most.
func TestServiceAccounts(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	// A new project has only its default service account.
	missing := vm{name: "missing"}.request()
	missing.InstanceResource.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String("nodes@gpufleet-test.iam.gserviceaccount.com")}}
	_, err := f.instances.Insert(ctx, missing)
	wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field 'resource.serviceAccounts[0].email': 'nodes@gpufleet-test.iam.gserviceaccount.com'. Service account nodes@gpufleet-test.iam.gserviceaccount.com does not exist.")
	if err := f.world.SetAccount(sim.Account{ServiceAccounts: []string{"nodes@gpufleet-test.iam.gserviceaccount.com"}}); err != nil {
		t.Fatal(err)
	}
	scopes := []string{"https://www.googleapis.com/auth/devstorage.read_only", "https://www.googleapis.com/auth/logging.write"}
	for name, sa := range map[string]*computepb.ServiceAccount{
		"named":   {Email: proto.String("nodes@gpufleet-test.iam.gserviceaccount.com"), Scopes: scopes},
		"default": {Email: proto.String("default"), Scopes: scopes[:1]},
	} {
		req := vm{name: name}.request()
		req.InstanceResource.ServiceAccounts = []*computepb.ServiceAccount{sa}
		if _, err := f.instances.Insert(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	none := vm{name: "none"}.request()
	if _, err := f.instances.Insert(ctx, none); err != nil {
		t.Fatal(err)
	}
	p, err := f.projects.Get(ctx, &computepb.GetProjectRequest{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		email  string
		scopes []string
	}{
		"named":   {"nodes@gpufleet-test.iam.gserviceaccount.com", scopes},
		"default": {p.GetDefaultServiceAccount(), scopes[:1]},
	} {
		sa := f.get(t, zone, name).GetServiceAccounts()
		if len(sa) != 1 || sa[0].GetEmail() != want.email || !slices.Equal(sa[0].GetScopes(), want.scopes) {
			t.Errorf("%s: service accounts %v, want %s with %v", name, sa, want.email, want.scopes)
		}
	}
	if sa := f.get(t, zone, "none").GetServiceAccounts(); len(sa) != 0 {
		t.Errorf("an instance created without a service account has %v", sa)
	}
	two := vm{name: "two"}.request()
	two.InstanceResource.ServiceAccounts = []*computepb.ServiceAccount{{Email: proto.String("default")}, {Email: proto.String("other@x.iam.gserviceaccount.com")}}
	_, err = f.instances.Insert(ctx, two)
	wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field 'resource.serviceAccounts': ''. Only one service account per VM instance is supported.")
}

// An instance has an internal address of its own in 10.128.0.0/9, and an
// external one only through an access config.
func TestNetworkInterfaces(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	configs := map[string][]*computepb.AccessConfig{
		"private":  nil,
		"nat":      {{Name: proto.String("External NAT"), Type: proto.String("ONE_TO_ONE_NAT")}},
		"untyped":  {{}},
		"reserved": {{Name: proto.String("static"), NatIP: proto.String("203.0.113.7")}},
	}
	for name, ac := range configs {
		req := vm{name: name}.request()
		req.InstanceResource.NetworkInterfaces[0].AccessConfigs = ac
		if _, err := f.instances.Insert(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	internal := map[string]string{}
	for name, want := range configs {
		nic := f.get(t, zone, name).GetNetworkInterfaces()[0]
		ip, err := netip.ParseAddr(nic.GetNetworkIP())
		if err != nil || !netip.MustParsePrefix("10.128.0.0/9").Contains(ip) {
			t.Errorf("%s: networkIP %q is not in 10.128.0.0/9", name, nic.GetNetworkIP())
		}
		if other, ok := internal[nic.GetNetworkIP()]; ok {
			t.Errorf("%s has %s's networkIP %s", name, other, nic.GetNetworkIP())
		}
		internal[nic.GetNetworkIP()] = name
		got := nic.GetAccessConfigs()
		if len(want) == 0 {
			if len(got) != 0 {
				t.Errorf("%s: access configs %v, want none", name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].GetType() != "ONE_TO_ONE_NAT" || got[0].GetNetworkTier() != "PREMIUM" {
			t.Fatalf("%s: access configs %v", name, got)
		}
		wantName, wantIP := cmpOr(want[0].GetName(), "External NAT"), want[0].GetNatIP()
		if got[0].GetName() != wantName || wantIP != "" && got[0].GetNatIP() != wantIP || got[0].GetNatIP() == "" {
			t.Errorf("%s: access config %v, want name %q and address %q", name, got[0], wantName, wantIP)
		}
	}
	// The same instance reads the same on every get.
	if a, b := f.get(t, zone, "nat").GetNetworkInterfaces()[0], f.get(t, zone, "nat").GetNetworkInterfaces()[0]; !proto.Equal(a, b) {
		t.Errorf("two gets differ: %v and %v", a, b)
	}

	for _, tt := range []struct {
		name    string
		configs []*computepb.AccessConfig
		message string
	}{
		{"two", []*computepb.AccessConfig{{}, {}}, "Invalid value for field 'resource.networkInterfaces[0].accessConfigs': ''. At most one access config is supported per network interface."},
		{"ipv6", []*computepb.AccessConfig{{Type: proto.String("DIRECT_IPV6")}}, "Invalid value for field 'resource.networkInterfaces[0].accessConfigs[0].type': 'DIRECT_IPV6'. Must be one of [ONE_TO_ONE_NAT]."},
	} {
		req := vm{name: "bad-" + tt.name}.request()
		req.InstanceResource.NetworkInterfaces[0].AccessConfigs = tt.configs
		_, err := f.instances.Insert(ctx, req)
		wantAPIError(t, err, http.StatusBadRequest, "invalid", tt.message)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A boot disk's type must be one the zone has, named as the call names
// types, and one the machine series takes: A3 and G2 refuse Standard
// Persistent Disk, A3 Ultra any Persistent Disk, as GCE does.
func TestBootDiskTypes(t *testing.T) {
	url := func(t string) string { return "zones/" + zone + "/diskTypes/" + t }
	f := newFixture(t, sim.Config{}, Options{})
	// A3 Ultra is asked for in a zone of the test region that sells it,
	// which need not be the test zone.
	ultra := zoneSelling(t, f.world, "us-central1", "a3-ultragpu-8g")
	ultraURL := func(t string) string { return "zones/" + ultra + "/diskTypes/" + t }
	const field = "resource.disks[0].initializeParams.diskType"
	tests := []struct {
		machineType, diskType string
		want                  string // the disk type made, or "" when refused
		message               string
		zone                  string // "" for the test zone
	}{
		{"g2-standard-4", url("pd-balanced"), "pd-balanced", "", ""},
		{"g2-standard-4", zoneBase + "/diskTypes/pd-ssd", "pd-ssd", "", ""},
		{"g2-standard-4", "projects/" + project + "/zones/" + zone + "/diskTypes/pd-balanced", "pd-balanced", "", ""},
		{"g2-standard-4", "", "pd-balanced", "", ""},
		{"a3-highgpu-8g", url("pd-balanced"), "pd-balanced", "", ""},
		{"a3-highgpu-8g", url("hyperdisk-balanced"), "hyperdisk-balanced", "", ""},
		{"a3-highgpu-8g", "", "hyperdisk-balanced", "", ""},
		{"a3-ultragpu-8g", ultraURL("hyperdisk-balanced"), "hyperdisk-balanced", "", ultra},
		{"a2-highgpu-1g", url("pd-standard"), "pd-standard", "", ""},
		{"a2-highgpu-1g", "", "pd-standard", "", ""},
		{"g2-standard-4", url("pd-standard"), "", "pd-standard disk type cannot be used by g2-standard-4 machine type.", ""},
		{"a3-highgpu-8g", url("pd-standard"), "", "pd-standard disk type cannot be used by a3-highgpu-8g machine type.", ""},
		{"a3-ultragpu-8g", ultraURL("pd-standard"), "", "pd-standard disk type cannot be used by a3-ultragpu-8g machine type.", ultra},
		{"a3-ultragpu-8g", ultraURL("pd-balanced"), "", "pd-balanced disk type cannot be used by a3-ultragpu-8g machine type.", ultra},
		{"g2-standard-4", url("hyperdisk-balanced"), "", "hyperdisk-balanced disk type cannot be used by g2-standard-4 machine type.", ""},
		{"a3-highgpu-8g", url("hyperdisk-ml"), "", "hyperdisk-ml disk type cannot be used as a boot disk.", ""},
		{"g2-standard-4", url("pd-fast"), "", "Disk type with name 'pd-fast' does not exist in zone '" + zone + "'.", ""},
		{"g2-standard-4", "zones/us-central1-b/diskTypes/pd-balanced", "", "Disk type with name 'pd-balanced' does not exist in zone '" + zone + "'.", ""},
		{"g2-standard-4", "pd-balanced", "", "The URL is malformed.", ""},
		{"g2-standard-4", "zones/" + zone + "/pd-balanced", "", "The URL is malformed.", ""},
	}
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.machineType+" "+tt.diskType, func(t *testing.T) {
			name := fmt.Sprintf("d-%d", i)
			v := vm{name: name, machineType: tt.machineType, zone: tt.zone}
			req := v.request()
			zoneLink := f.link(scope(project, v.zoneOr()))
			if tt.diskType != "" {
				req.InstanceResource.Disks[0].InitializeParams.DiskType = proto.String(tt.diskType)
			}
			_, err := f.instances.Insert(ctx, req)
			if tt.want == "" {
				wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field '"+field+"': '"+tt.diskType+"'. "+tt.message)
				if _, ok := f.world.ByName(cloud, scope(project, v.zoneOr()), name); ok {
					t.Error("the refused insert made an instance")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			disk, err := f.disks.Get(ctx, &computepb.GetDiskRequest{Project: project, Zone: v.zoneOr(), Disk: name})
			if err != nil {
				t.Fatalf("getting disk %s: %v", name, err)
			}
			if disk.GetType() != zoneLink+"/diskTypes/"+tt.want || disk.GetSizeGb() != 200 || disk.GetStatus() != "READY" ||
				!slices.Equal(disk.GetUsers(), []string{zoneLink + "/instances/" + name}) {
				t.Errorf("disk %v, want a READY %s of 200 GB used by the instance", disk, tt.want)
			}
			inst := f.get(t, v.zoneOr(), name)
			d := inst.GetDisks()[0]
			if d.GetSource() != zoneLink+"/disks/"+name || d.GetType() != "PERSISTENT" || !d.GetBoot() || !d.GetAutoDelete() || d.GetDeviceName() != "persistent-disk-0" {
				t.Errorf("attached disk %v", d)
			}
		})
	}

	// bulkInsert names types bare, as instance templates do.
	for _, tt := range []struct{ diskType, message string }{
		{url("pd-balanced"), "Bulk insert takes a disk type name, such as 'pd-balanced', not a URL."},
		{"pd-standard", "pd-standard disk type cannot be used by g2-standard-4 machine type."},
	} {
		b := batch{names: []string{"bulk-0"}, count: 1}.request()
		b.BulkInsertInstanceResourceResource.InstanceProperties.Disks[0].InitializeParams.DiskType = proto.String(tt.diskType)
		_, err := f.instances.BulkInsert(ctx, b)
		wantAPIError(t, err, http.StatusBadRequest, "invalid", "Invalid value for field '"+bulkProps+".disks[0].initializeParams.diskType': '"+tt.diskType+"'. "+tt.message)
	}

	// A disk goes with its instance.
	_, err := f.disks.Get(ctx, &computepb.GetDiskRequest{Project: project, Zone: zone, Disk: "no-such-disk"})
	wantAPIError(t, err, http.StatusNotFound, "notFound", "The resource 'projects/"+project+"/zones/"+zone+"/disks/no-such-disk' was not found")
}
