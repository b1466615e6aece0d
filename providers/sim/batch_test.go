// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// TestLaunchBatchRefusesANameTwice: a batch that names one instance twice
// would put two of that name in the scope.
func TestLaunchBatchRefusesANameTwice(t *testing.T) {
	w, _ := newWorld(t, Config{})
	spec := BatchSpec{
		LaunchSpec: LaunchSpec{Cloud: "gcp", Zone: "us-central1-a", Scope: "projects/p/zones/us-central1-a", InstanceType: "g2-standard-4",
			Market: catalog.OnDemand, Operation: OperationBulkInsert, AsyncCapacity: true, AsyncQuota: true},
		Min: 1, Max: 3, Names: []string{"a", "b", "a"},
	}
	if _, err := w.LaunchBatch(spec); kindOf(err) != KindInvalid {
		t.Errorf("a batch naming a twice: %v, want it refused as invalid", err)
	}
	if n := len(w.List("gcp", nil)); n != 0 {
		t.Errorf("the refused batch launched %d instances", n)
	}
	spec.Names = []string{"a", "b", "c"}
	res, err := w.LaunchBatch(spec)
	if err != nil || len(res.Instances) != 3 || res.Operation == nil || res.Operation.Target != 3 {
		t.Errorf("a batch of distinct names: %+v, %v", res, err)
	}
}
