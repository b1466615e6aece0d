// SPDX-License-Identifier: Apache-2.0

package aws

import (
	"context"
	"testing"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestNew(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, &schema.AWS{}, catalog.Default(), Options{}); err == nil {
		t.Error("a configuration without regions was accepted")
	}
	// The production path: the SDK's own HTTP client and credential chain,
	// resolved lazily, so building the provider calls nothing.
	cfg := &schema.AWS{Regions: []string{"us-east-1", "eu-west-1", "us-east-1"}}
	p, err := New(ctx, cfg, catalog.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "aws" || len(p.clients) != 2 || len(p.quotas) != 2 {
		t.Errorf("name %q with %d EC2 and %d Service Quotas clients, want aws with one of each per region", p.Name(), len(p.clients), len(p.quotas))
	}
	if p.opts.MaxAttempts != 5 || p.opts.Concurrency != 8 || p.opts.CallTimeout == 0 || p.opts.MaxBackoff == 0 {
		t.Errorf("defaults %+v", p.opts)
	}
}
