// SPDX-License-Identifier: Apache-2.0

package clouds

import (
	"context"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The real credentials go with every call to an endpoint beyond loopback,
// so such an endpoint must be https unless plain http is allowed; the
// emulator on loopback stays plain.
func TestAPlainHTTPEndpointIsRefused(t *testing.T) {
	cfg := schema.Config{Clouds: schema.Clouds{GCP: &schema.GCP{Enabled: true, Project: "acme-gpu-fleet", Regions: []string{"us-central1"}}}}
	_, err := New(context.Background(), cfg, catalog.Default(), Endpoints{GCP: "http://compute.example.test"})
	if err == nil || !strings.Contains(err.Error(), `setting up gcp, the endpoint "http://compute.example.test" is plain http to a host other than loopback`) {
		t.Errorf("err = %v, want the endpoint refused", err)
	}
	set, err := New(context.Background(), cfg, catalog.Default(), Endpoints{GCP: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatalf("the emulator's endpoint: %v", err)
	}
	set.Close()
}
