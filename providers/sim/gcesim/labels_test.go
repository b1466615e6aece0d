// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"maps"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// TestSetLabels: instances.setLabels replaces the labels when the request
// carries the fingerprint of the labels the instance has, and fails 412
// conditionNotMet, changing nothing, for a fingerprint gone stale or none.
func TestSetLabels(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	ctx := context.Background()
	created := f.create(t, vm{name: "labelled", labels: map[string]string{"team": "ml"}})
	read := created.GetLabelFingerprint()
	set := func(labels map[string]string, fingerprint *string) (*computepb.Operation, error) {
		op, err := f.instances.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{
			Project: project, Zone: zone, Instance: "labelled",
			InstancesSetLabelsRequestResource: &computepb.InstancesSetLabelsRequest{Labels: labels, LabelFingerprint: fingerprint},
		})
		if err != nil {
			return nil, err
		}
		if err := op.Wait(ctx); err != nil {
			return nil, err
		}
		return op.Proto(), nil
	}

	want := map[string]string{"team": "ml", "gpufleet-fleet": "ml"}
	op, err := set(want, proto.String(read))
	if err != nil {
		t.Fatalf("setLabels with the fingerprint read: %v", err)
	}
	if op.GetOperationType() != "setLabels" || op.GetTargetId() != created.GetId() || op.GetError() != nil {
		t.Errorf("operation %v, want a successful setLabels of %d", op, created.GetId())
	}
	got := f.get(t, zone, "labelled")
	if !maps.Equal(got.GetLabels(), want) {
		t.Errorf("labels %v, want %v", got.GetLabels(), want)
	}
	if got.GetLabelFingerprint() == read {
		t.Errorf("the fingerprint stayed %s though the labels changed", read)
	}

	for _, tt := range []struct {
		name        string
		fingerprint *string
	}{
		{"stale fingerprint", proto.String(read)},
		{"no fingerprint", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := set(map[string]string{"team": "other"}, tt.fingerprint)
			wantAPIError(t, err, 412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed")
			if now := f.get(t, zone, "labelled").GetLabels(); !maps.Equal(now, want) {
				t.Errorf("a refused setLabels changed the labels to %v", now)
			}
		})
	}
	t.Run("unknown instance", func(t *testing.T) {
		_, err := f.instances.SetLabels(ctx, &computepb.SetLabelsInstanceRequest{
			Project: project, Zone: zone, Instance: "nobody",
			InstancesSetLabelsRequestResource: &computepb.InstancesSetLabelsRequest{Labels: want, LabelFingerprint: proto.String(read)},
		})
		wantAPIError(t, err, 404, "notFound", "The resource 'projects/gpufleet-test/zones/us-central1-a/instances/nobody' was not found")
	})
	t.Run("invalid label", func(t *testing.T) {
		_, err := set(map[string]string{"Team": "ml"}, proto.String(got.GetLabelFingerprint()))
		if err == nil {
			t.Fatal("a label key with a capital letter was taken")
		}
	})
}
