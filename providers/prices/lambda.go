// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// LambdaCloudAPI is Lambda Cloud's public API origin.
const LambdaCloudAPI = "https://cloud.lambda.ai"

// LambdaAPIKeyEnv names the environment variable Lambda's API key is read
// from: the price list is behind the same key as everything else.
const LambdaAPIKeyEnv = "LAMBDA_API_KEY"

// LambdaOptions tune the Lambda loader.
type LambdaOptions struct {
	Options
	// APIKey authenticates to the API; empty means LambdaAPIKeyEnv's.
	APIKey string
}

// Lambda reads Lambda Cloud's instance types, each with one hourly price
// in every region: Lambda has no zones and no spot market, and prices a
// type the same wherever it runs. Which regions have room now is not a
// price, and is the provider's to read. Only the types the catalog knows
// are priced (the API describes a type's GPUs in prose); a new type needs
// its facts in the catalog first.
type Lambda struct {
	b        *base
	client   *retryablehttp.Client
	endpoint *url.URL
	key      string
}

var _ Loader = (*Lambda)(nil)

// NewLambda builds the Lambda loader; it calls nothing yet. Without an API
// key it fails, naming the variable: there is no price list to read
// without one.
func NewLambda(opts LambdaOptions) (*Lambda, error) {
	key := opts.APIKey
	if key == "" {
		key = os.Getenv(LambdaAPIKeyEnv)
	}
	if key == "" {
		return nil, fmt.Errorf("lambda prices need an API key: set %s", LambdaAPIKeyEnv)
	}
	b, err := newBase(catalog.Lambda, opts.Options)
	if err != nil {
		return nil, err
	}
	endpoint, err := checkEndpoint("lambda", opts.Endpoint, LambdaCloudAPI, opts.AllowHTTP)
	if err != nil {
		return nil, err
	}
	b.what = "Lambda Cloud API instance types"
	// The API lists the regions with room now, not every region: the
	// regions priced are those the catalog knows the country of.
	b.discover = false
	return &Lambda{b: b, client: newRetryClient(b, endpoint), endpoint: endpoint, key: key}, nil
}

// Cloud is "lambda".
func (l *Lambda) Cloud() string { return catalog.Lambda }

// lambdaTypes is GET /api/v1/instance-types.
type lambdaTypes struct {
	Data map[string]struct {
		InstanceType struct {
			Name              string `json:"name"`
			PriceCentsPerHour *int64 `json:"price_cents_per_hour"`
			Specs             struct {
				GPUs int `json:"gpus"`
			} `json:"specs"`
		} `json:"instance_type"`
	} `json:"data"`
}

// Load reads the instance types and prices each in every region read.
func (l *Lambda) Load(ctx context.Context) (*catalog.Catalog, error) {
	var types lambdaTypes
	if err := getJSONAs(ctx, l.client, l.endpoint.JoinPath("/api/v1/instance-types"), "Bearer "+l.key, &types); err != nil {
		return nil, fmt.Errorf("listing Lambda instance types, %w", err)
	}
	c := l.b.collector()
	names := make([]string, 0, len(types.Data))
	for name := range types.Data {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := types.Data[name].InstanceType
		drop := Drop{InstanceType: name, Market: catalog.OnDemand, Row: name}
		s, ok := l.b.shapes[name]
		switch {
		case !ok:
			// A CPU type is no offer; a GPU type the catalog has no
			// facts of is counted.
			if t.Specs.GPUs > 0 {
				drop.Reason, drop.Detail = ReasonNoSpec, "no GPU facts for the type"
				l.b.drop(drop)
			}
			continue
		case t.Name != name:
			drop.Reason, drop.Detail = ReasonMalformed, fmt.Sprintf("listed as %q under %q", t.Name, name)
			l.b.drop(drop)
			continue
		case t.PriceCentsPerHour == nil:
			drop.Reason = ReasonNoPrice
			l.b.drop(drop)
			continue
		}
		for _, r := range l.b.regions {
			c.add(catalog.Offer{
				Region: r.Name, Zone: r.Name, InstanceType: name, Market: catalog.OnDemand,
				GPUModel: s.gpuModel, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
			}, float64(*t.PriceCentsPerHour)/100, name)
		}
	}
	return c.catalog()
}
