// SPDX-License-Identifier: Apache-2.0

package gcp

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// canary marks bootstrap data, so a test can tell where it went.
const canary = "canary-secret-4711"

func bootstrap(format string) *providers.Bootstrap {
	data := "#!/bin/bash\necho " + canary + " > /etc/token\n"
	if format == schema.BootstrapCloudInit {
		data = "#cloud-config\nwrite_files:\n  - path: /etc/token\n    content: " + canary + "\n"
	}
	return &providers.Bootstrap{Format: format, Data: []byte(data), Digest: "0123456789ab"}
}

// reader reads instances and disks back with SDK clients of its own, as
// anyone else looking at the project would.
type reader struct {
	instances *compute.InstancesClient
	disks     *compute.DisksClient
}

func newReader(t *testing.T, b backend) reader {
	t.Helper()
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(b.url), option.WithoutAuthentication()}
	instances, err := compute.NewInstancesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { instances.Close() })
	disks, err := compute.NewDisksRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disks.Close() })
	return reader{instances: instances, disks: disks}
}

func (r reader) get(t *testing.T, zone, name string) *computepb.Instance {
	t.Helper()
	vm, err := r.instances.Get(testCtx(t), &computepb.GetInstanceRequest{Project: testProject, Zone: zone, Instance: name})
	if err != nil {
		t.Fatalf("getting %s: %v", name, err)
	}
	return vm
}

// bootDisk reads the boot disk instances.get names by its source: its
// type is the disk's own, not the instance's.
func (r reader) bootDisk(t *testing.T, vm *computepb.Instance) *computepb.Disk {
	t.Helper()
	source := vm.GetDisks()[0].GetSource()
	disk, err := r.disks.Get(testCtx(t), &computepb.GetDiskRequest{Project: testProject, Zone: lastSegment(vm.GetZone()), Disk: lastSegment(source)})
	if err != nil {
		t.Fatalf("getting disk %s: %v", source, err)
	}
	return disk
}

// wantMetadata asserts that the instance's metadata holds the bootstrap,
// under its format's key, and nothing else.
func wantMetadata(t *testing.T, vm *computepb.Instance, boot *providers.Bootstrap) {
	t.Helper()
	md := vm.GetMetadata()
	items := md.GetItems()
	if len(items) != 1 || md.GetFingerprint() == "" {
		t.Fatalf("metadata of %s has %d items and fingerprint %q, want the bootstrap's alone", vm.GetName(), len(items), md.GetFingerprint())
	}
	want := map[string]string{schema.BootstrapCloudInit: "user-data", schema.BootstrapScript: "startup-script"}[boot.Format]
	if items[0].GetKey() != want {
		t.Errorf("metadata key %q, want %q", items[0].GetKey(), want)
	}
	if items[0].GetValue() != string(boot.Data) || !strings.Contains(items[0].GetValue(), canary) {
		t.Errorf("metadata %s does not hold the bootstrap", items[0].GetKey())
	}
	if got := vm.GetLabels()[providers.TagBootstrap]; got != boot.Digest {
		t.Errorf("label %s = %q, want the digest %q", providers.TagBootstrap, got, boot.Digest)
	}
}

// A node launches with its bootstrap in the metadata key its format takes,
// the configured service account and scopes, an external address only when
// asked for, and a boot disk of a type its machine series takes; GCE gives
// all of it back.
func TestCreateLaunchesWhatTheNodeNeeds(t *testing.T) {
	g2 := onDemand
	a3 := planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: testZone, InstanceType: "a3-highgpu-8g", Market: catalog.OnDemand}
	// A3 Ultra goes to a zone of the region whose catalog sells it as spot.
	a3Ultra := planner.OfferKey{Cloud: Name, Region: "us-central1", InstanceType: "a3-ultragpu-8g", Market: catalog.Spot}
	for _, o := range catalog.Default().Offers {
		if o.Cloud == Name && o.Region == a3Ultra.Region && o.InstanceType == a3Ultra.InstanceType && o.Market == a3Ultra.Market && o.Zone != "" {
			a3Ultra.Zone = o.Zone
			break
		}
	}
	if a3Ultra.Zone == "" {
		t.Fatal("the catalog sells no a3-ultragpu-8g as spot in a zone of us-central1")
	}
	scoped := []string{"https://www.googleapis.com/auth/devstorage.read_only", "https://www.googleapis.com/auth/logging.write"}
	tests := []struct {
		name       string
		offer      planner.OfferKey
		format     string
		externalIP bool
		scopes     []string
		wantScopes []string
		wantDisk   string
	}{
		{"g2 cloud-init private", g2, schema.BootstrapCloudInit, false, nil, []string{cloudPlatformScope}, "pd-balanced"},
		{"g2 script external", g2, schema.BootstrapScript, true, scoped, scoped, "pd-balanced"},
		{"a3 script private", a3, schema.BootstrapScript, false, scoped, scoped, "pd-balanced"},
		{"a3 cloud-init external", a3, schema.BootstrapCloudInit, true, nil, []string{cloudPlatformScope}, "pd-balanced"},
		{"a3 ultra spot cloud-init", a3Ultra, schema.BootstrapCloudInit, false, nil, []string{cloudPlatformScope}, "hyperdisk-balanced"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Launch.ExternalIP = tt.externalIP
			cfg.Launch.Scopes = tt.scopes
			b := newBackendWith(t, cfg, sim.Config{}, nil)
			r := newReader(t, b)
			req := testRequest(tt.offer, "boot", i)
			req.Bootstrap = bootstrap(tt.format)
			inst, err := b.provider.Create(testCtx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if inst.Bootstrap != req.Bootstrap.Digest {
				t.Errorf("Create returned bootstrap %q, want %q", inst.Bootstrap, req.Bootstrap.Digest)
			}
			vm := r.get(t, tt.offer.Zone, inst.ID)
			wantMetadata(t, vm, req.Bootstrap)

			sa := vm.GetServiceAccounts()
			if len(sa) != 1 || sa[0].GetEmail() != cfg.Launch.ServiceAccount || !slices.Equal(sa[0].GetScopes(), tt.wantScopes) {
				t.Errorf("service accounts %v, want %s with %v", sa, cfg.Launch.ServiceAccount, tt.wantScopes)
			}

			nic := vm.GetNetworkInterfaces()[0]
			if !strings.HasSuffix(nic.GetNetwork(), "/global/networks/default") || !strings.HasSuffix(nic.GetSubnetwork(), "/regions/us-central1/subnetworks/gpu") {
				t.Errorf("network %q subnetwork %q", nic.GetNetwork(), nic.GetSubnetwork())
			}
			ip, err := netip.ParseAddr(nic.GetNetworkIP())
			if err != nil || !netip.MustParsePrefix("10.128.0.0/9").Contains(ip) {
				t.Errorf("networkIP %q is not in 10.128.0.0/9", nic.GetNetworkIP())
			}
			configs := nic.GetAccessConfigs()
			switch {
			case !tt.externalIP && len(configs) != 0:
				t.Errorf("access configs %v on a node that asked for no external address", configs)
			case tt.externalIP && (len(configs) != 1 || configs[0].GetType() != "ONE_TO_ONE_NAT" || configs[0].GetName() != "External NAT" || configs[0].GetNatIP() == ""):
				t.Errorf("access configs %v, want one ONE_TO_ONE_NAT External NAT with an address", configs)
			}

			disk := vm.GetDisks()[0]
			if !disk.GetBoot() || !disk.GetAutoDelete() || disk.GetType() != "PERSISTENT" || disk.GetDiskSizeGb() != 200 || disk.GetDeviceName() == "" {
				t.Errorf("boot disk %v", disk)
			}
			bd := r.bootDisk(t, vm)
			if got := lastSegment(bd.GetType()); got != tt.wantDisk || !strings.HasSuffix(bd.GetType(), "/zones/"+tt.offer.Zone+"/diskTypes/"+tt.wantDisk) {
				t.Errorf("boot disk type %q, want %s", bd.GetType(), tt.wantDisk)
			}
			if bd.GetSizeGb() != 200 {
				t.Errorf("boot disk of %d GB, want 200", bd.GetSizeGb())
			}
		})
	}
}

// A create without a bootstrap sends no metadata.
func TestCreateWithoutBootstrapSendsNoMetadata(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	inst, err := b.provider.Create(testCtx(t), testRequest(onDemand, "plain", 0))
	if err != nil {
		t.Fatal(err)
	}
	vm := newReader(t, b).get(t, testZone, inst.ID)
	if items := vm.GetMetadata().GetItems(); len(items) != 0 {
		t.Errorf("metadata items %v, want none", items)
	}
	if _, ok := vm.GetLabels()[providers.TagBootstrap]; ok || inst.Bootstrap != "" {
		t.Errorf("a node without a bootstrap is labelled with one: %v", vm.GetLabels())
	}
}

// A bootstrap GCE cannot take is refused before any call, with its key
// and size and without its data; so is one of no known format.
func TestCreateRefusesABootstrapGCECannotTake(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	big := bootstrap(schema.BootstrapCloudInit)
	big.Data = []byte(strings.Repeat(canary+"\n", 300<<10/len(canary+"\n")))
	notText := bootstrap(schema.BootstrapScript)
	notText.Data = append([]byte(canary), 0xff, 0xfe)
	unknown := bootstrap("ignition")
	tests := []struct {
		name string
		boot *providers.Bootstrap
		want []string
	}{
		{"300 KB", big, []string{"user-data", "262144"}},
		{"not UTF-8", notText, []string{"startup-script", "UTF-8"}},
		{"unknown format", unknown, []string{`"ignition"`}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(onDemand, "refused", i)
			req.Bootstrap = tt.boot
			_, err := b.provider.Create(testCtx(t), req)
			if !errors.Is(err, providers.ErrInvalid) {
				t.Fatalf("got %v, want an invalid request", err)
			}
			msg := err.Error()
			if strings.Contains(msg, canary) {
				t.Errorf("the error quotes the bootstrap: %.200s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %s", msg, w)
				}
			}
			batch := providers.BatchRequest{CreateRequest: req, Count: 2}
			if _, err := b.provider.CreateBatch(testCtx(t), batch); !errors.Is(err, providers.ErrInvalid) || strings.Contains(err.Error(), canary) {
				t.Errorf("a batch got %v, want an invalid request without the data", err)
			}
		})
	}
	if n := b.calls("instances.insert") + b.calls("instances.bulkInsert"); n != 0 {
		t.Errorf("%d inserts reached GCE, want none", n)
	}
}

// Every node of a batch boots with the bootstrap, the service account and
// the boot disk type, as a node launched alone does.
func TestCreateBatchCarriesTheLaunchSettings(t *testing.T) {
	cfg := testConfig()
	cfg.Launch.ExternalIP = true
	b := newBackendWith(t, cfg, sim.Config{}, nil)
	r := newReader(t, b)
	offer := planner.OfferKey{Cloud: Name, Region: "us-central1", Zone: testZone, InstanceType: "a3-highgpu-8g", Market: catalog.OnDemand}
	// Each node has an internal address of its own.
	seen := map[string]string{}
	for _, format := range []string{schema.BootstrapCloudInit, schema.BootstrapScript} {
		t.Run(format, func(t *testing.T) {
			req := providers.BatchRequest{CreateRequest: testRequest(offer, "bulk-"+format, 0), Count: 3}
			req.Bootstrap = bootstrap(format)
			insts, err := b.provider.CreateBatch(testCtx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(insts) != 3 {
				t.Fatalf("made %d, want 3", len(insts))
			}
			for _, inst := range insts {
				if inst.Bootstrap != req.Bootstrap.Digest {
					t.Errorf("%s returned with bootstrap %q", inst.ID, inst.Bootstrap)
				}
				vm := r.get(t, testZone, inst.ID)
				wantMetadata(t, vm, req.Bootstrap)
				if sa := vm.GetServiceAccounts(); len(sa) != 1 || sa[0].GetEmail() != cfg.Launch.ServiceAccount || !slices.Equal(sa[0].GetScopes(), []string{cloudPlatformScope}) {
					t.Errorf("%s: service accounts %v", inst.ID, sa)
				}
				nic := vm.GetNetworkInterfaces()[0]
				if configs := nic.GetAccessConfigs(); len(configs) != 1 || configs[0].GetNatIP() == "" {
					t.Errorf("%s: access configs %v, want one with an address", inst.ID, configs)
				}
				if other, ok := seen[nic.GetNetworkIP()]; ok {
					t.Errorf("%s has the networkIP %s of %s", inst.ID, nic.GetNetworkIP(), other)
				}
				seen[nic.GetNetworkIP()] = inst.ID
				if got := lastSegment(r.bootDisk(t, vm).GetType()); got != "pd-balanced" {
					t.Errorf("%s: boot disk type %s, want pd-balanced", inst.ID, got)
				}
			}
		})
	}
}

// An insert names the boot disk type by its zonal URL, as instances.insert
// wants; a bulkInsert by its name, as instance properties do.
func TestBootDiskTypeForms(t *testing.T) {
	b := newBackend(t, sim.Config{}, nil)
	req := testRequest(onDemand, "forms", 0)
	if got := b.provider.instanceResource("n", req, false).GetDisks()[0].GetInitializeParams().GetDiskType(); got != "zones/"+testZone+"/diskTypes/pd-balanced" {
		t.Errorf("insert disk type %q", got)
	}
	if got := b.provider.instanceResource("n", req, true).GetDisks()[0].GetInitializeParams().GetDiskType(); got != "pd-balanced" {
		t.Errorf("bulkInsert disk type %q", got)
	}
}

func TestBootDiskType(t *testing.T) {
	for machineType, want := range map[string]string{
		"a3-highgpu-8g":  "pd-balanced",
		"a3-highgpu-1g":  "pd-balanced",
		"a3-megagpu-8g":  "pd-balanced",
		"a3-edgegpu-8g":  "pd-balanced",
		"g2-standard-4":  "pd-balanced",
		"g2-standard-96": "pd-balanced",
		"a2-highgpu-1g":  "pd-balanced",
		"a2-ultragpu-8g": "pd-balanced",
		"n1-standard-8":  "pd-balanced",
		"a3-ultragpu-8g": "hyperdisk-balanced",
		"a4-highgpu-8g":  "hyperdisk-balanced",
		"a4x-highgpu-4g": "hyperdisk-balanced",
	} {
		if got := bootDiskType(machineType); got != want {
			t.Errorf("bootDiskType(%s) = %s, want %s", machineType, got, want)
		}
	}
}
