// SPDX-License-Identifier: Apache-2.0

package fake

import (
	"context"
	"slices"

	"github.com/gpufleet/gpufleet/providers"
)

// SetCapacity sets what Capacity answers: the account's quotas, the zones'
// offerings and warnings about what could not be read.
func (p *Provider) SetCapacity(c providers.Capacity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.capacity = c
}

// Capacity answers what SetCapacity set; nothing is known until then.
func (p *Provider) Capacity(ctx context.Context) (providers.Capacity, error) {
	call := p.record(Call{Method: MethodCapacity})
	if err := ctx.Err(); err != nil {
		return providers.Capacity{}, p.done(call, "", err)
	}
	p.mu.Lock()
	c := p.capacity
	c.Quotas = slices.Clone(c.Quotas)
	c.Offerings = slices.Clone(c.Offerings)
	c.Warnings = slices.Clone(c.Warnings)
	p.mu.Unlock()
	return c, p.done(call, "", nil)
}
