package azure

import (
	"context"

	"github.com/gpufleet/gpufleet/providers"
)

// Capacity is not read yet.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	return providers.Capacity{Warnings: []string{"azure: quotas and zone offerings are not read yet"}}, ctx.Err()
}
