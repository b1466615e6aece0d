// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// An instance reads back with what GCE returns beside what it was made
// with: its machine type's accelerators, its CPU platform, fingerprints,
// network tags, and a boot disk with its interface and license.
func TestInstanceShape(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	req := vm{name: "shaped", machineType: "a3-highgpu-8g"}.request()
	req.InstanceResource.Tags = &computepb.Tags{Items: []string{"gpu", "ssh"}}
	req.InstanceResource.Disks[0].InitializeParams.DiskType = proto.String("zones/" + zone + "/diskTypes/hyperdisk-balanced")
	op, err := f.instances.Insert(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	inst := f.get(t, zone, "shaped")
	checks := map[string][2]any{
		"accelerator type":   {inst.GetGuestAccelerators()[0].GetAcceleratorType(), f.zoneLink() + "/acceleratorTypes/nvidia-h100-80gb"},
		"accelerator count":  {inst.GetGuestAccelerators()[0].GetAcceleratorCount(), int32(8)},
		"cpu platform":       {inst.GetCpuPlatform(), "Intel Sapphire Rapids"},
		"disk interface":     {inst.GetDisks()[0].GetInterface(), "NVME"},
		"disk license":       {inst.GetDisks()[0].GetLicenses()[0], f.link("projects/debian-cloud/global/licenses/debian-12-bookworm")},
		"tags":               {slices.Equal(inst.GetTags().GetItems(), []string{"gpu", "ssh"}), true},
		"tags fingerprint":   {inst.GetTags().GetFingerprint() != "", true},
		"fingerprint":        {inst.GetFingerprint() != "", true},
		"nic fingerprint":    {inst.GetNetworkInterfaces()[0].GetFingerprint() != "", true},
		"last start":         {inst.GetLastStartTimestamp(), "2026-03-01T12:00:00.000+00:00"},
		"deletion protected": {inst.GetDeletionProtection(), false},
		"shielded vTPM":      {inst.GetShieldedInstanceConfig().GetEnableVtpm(), true},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}

	bad := vm{name: "badtags"}.request()
	bad.InstanceResource.Tags = &computepb.Tags{Items: []string{"Not_A_Tag"}}
	_, err = f.instances.Insert(ctx, bad)
	wantAPIError(t, err, 400, "invalid", "Invalid value for field 'resource.tags.items[0]': 'Not_A_Tag'. Must be a match of regex '"+namePattern+"'")
}

// An instance is PROVISIONING for the first half of its insert, STAGING
// for the second and until it has booted, then RUNNING from the time
// both are over; deleted, it is STOPPING until the delete is done.
func TestStatusOverTheOperation(t *testing.T) {
	f := newFixture(t, sim.Config{OperationTime: 40 * time.Second, PendingFor: 50 * time.Second}, Options{})
	ctx := context.Background()
	if _, err := f.instances.Insert(ctx, vm{name: "slow"}.request()); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		advance time.Duration
		status  string
	}{
		{0, "PROVISIONING"},
		{19 * time.Second, "PROVISIONING"},
		{2 * time.Second, "STAGING"},
		{19 * time.Second, "STAGING"},
		{10 * time.Second, "RUNNING"},
	} {
		f.clock.Advance(step.advance)
		inst := f.get(t, zone, "slow")
		if inst.GetStatus() != step.status {
			t.Errorf("after %v status %s, want %s", f.clock.Now().Sub(start), inst.GetStatus(), step.status)
		}
		if running := inst.LastStartTimestamp != nil; running != (step.status == "RUNNING") {
			t.Errorf("%s instance has lastStartTimestamp %q", step.status, inst.GetLastStartTimestamp())
		}
	}
	if got := f.get(t, zone, "slow").GetLastStartTimestamp(); got != timestamp(start.Add(50*time.Second)) {
		t.Errorf("lastStartTimestamp %s, want when it booted", got)
	}

	op, err := f.instances.Delete(ctx, &computepb.DeleteInstanceRequest{Project: project, Zone: zone, Instance: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, zone, "slow").GetStatus(); got != "STOPPING" {
		t.Errorf("status while deleted %s, want STOPPING", got)
	}
	f.clock.Advance(40 * time.Second)
	if err := op.Poll(ctx); err != nil || !op.Done() {
		t.Errorf("delete %v done %v", err, op.Done())
	}
	if _, err := f.instances.Get(ctx, &computepb.GetInstanceRequest{Project: project, Zone: zone, Instance: "slow"}); !isNotFound(err) {
		t.Errorf("get after the delete: %v, want notFound", err)
	}
}
