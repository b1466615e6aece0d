// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// lambdaTypesAnswer is GET /api/v1/instance-types as Lambda documents it:
// a GPU type the catalog knows, one it does not, a CPU type, and a GPU
// type without a price.
const lambdaTypesAnswer = `{"data": {
  "gpu_8x_h100_sxm5": {"instance_type": {"name": "gpu_8x_h100_sxm5", "description": "8x H100 (80 GB SXM5)", "gpu_description": "H100 (80 GB SXM5)",
    "price_cents_per_hour": 2392, "specs": {"vcpus": 208, "memory_gib": 1800, "storage_gib": 24780, "gpus": 8}},
    "regions_with_capacity_available": [{"name": "us-east-1", "description": "Virginia, USA"}]},
  "gpu_8x_b300_sxm6": {"instance_type": {"name": "gpu_8x_b300_sxm6", "price_cents_per_hour": 9999, "specs": {"gpus": 8}},
    "regions_with_capacity_available": []},
  "cpu_4x_general": {"instance_type": {"name": "cpu_4x_general", "price_cents_per_hour": 20, "specs": {"vcpus": 4, "gpus": 0}},
    "regions_with_capacity_available": []},
  "gpu_1x_a10": {"instance_type": {"name": "gpu_1x_a10", "specs": {"gpus": 1}}, "regions_with_capacity_available": []}
}}`

func lambdaServer(t *testing.T, key string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": {"code": "global/invalid-api-key", "message": "API key was invalid, expired, or deleted."}}`))
			return
		}
		if r.URL.Path != "/api/v1/instance-types" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(lambdaTypesAnswer))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestLambdaPricesEveryKnownTypeInEveryRegionRead(t *testing.T) {
	const key = "secret_lambda_key_123"
	srv := lambdaServer(t, key)
	var d drops
	l, err := NewLambda(LambdaOptions{APIKey: key, Options: Options{Endpoint: srv.URL, Regions: []string{"us-east-1", "europe-central-1"}, OnDrop: d.add}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The facts of the type come from the embedded catalog's rows.
	var h100 catalog.Offer
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.Lambda && o.InstanceType == "gpu_8x_h100_sxm5" {
			h100 = o
		}
	}
	want := []catalog.Offer{
		offer(catalog.Lambda, "europe-central-1", "europe-central-1", "gpu_8x_h100_sxm5", catalog.OnDemand, "H100", 8, h100.VCPUs, h100.MemoryGiB, 23_920_000),
		offer(catalog.Lambda, "us-east-1", "us-east-1", "gpu_8x_h100_sxm5", catalog.OnDemand, "H100", 8, h100.VCPUs, h100.MemoryGiB, 23_920_000),
	}
	diffOffers(t, c.Offers, want)
	diffStrings(t, "drops", d.keys(), []string{
		" - gpu_1x_a10 on-demand: " + string(ReasonNoPrice),
		" - gpu_8x_b300_sxm6 on-demand: " + string(ReasonNoSpec),
	})
	if c.Source != catalog.Lambda {
		t.Errorf("source %q", c.Source)
	}
}

func TestLambdaPricesWithoutAKeyNameTheVariable(t *testing.T) {
	t.Setenv(LambdaAPIKeyEnv, "")
	_, err := NewLambda(LambdaOptions{})
	if err == nil || !strings.Contains(err.Error(), LambdaAPIKeyEnv) {
		t.Fatalf("err = %v, want one naming %s", err, LambdaAPIKeyEnv)
	}
}

func TestLambdaPricesWithARefusedKeyFailAndDoNotShowIt(t *testing.T) {
	srv := lambdaServer(t, "the-right-key")
	const wrong = "secret_wrong_key_456"
	l, err := NewLambda(LambdaOptions{APIKey: wrong, Options: Options{Endpoint: srv.URL, Regions: []string{"us-east-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Load(context.Background())
	if err == nil {
		t.Fatalf("a refused key gave a catalog of %d offers", len(c.Offers))
	}
	if !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), wrong) {
		t.Fatalf("err = %v: want HTTP 401, without the key", err)
	}
}
