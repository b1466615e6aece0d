// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"os"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
)

// spec is a workload's spec, or nil for one the repository does not have.
func (r *run) spec(fleet, workload string) *schema.Workload {
	for fi := range r.repo.Fleets {
		f := &r.repo.Fleets[fi]
		if f.Name != fleet {
			continue
		}
		for wi := range f.Workloads {
			if w := &f.Workloads[wi]; w.Name == workload {
				return w
			}
		}
	}
	return nil
}

// bootstrapOf is the bootstrap a workload's nodes run on a cloud, or nil.
func (r *run) bootstrapOf(fleet, workload, cloud string) *schema.Bootstrap {
	if w := r.spec(fleet, workload); w != nil {
		return r.repo.Config.BootstrapFor(w, cloud)
	}
	return nil
}

// perNodeBootstrap reports whether a workload's bootstrap on a cloud
// differs from node to node.
func (r *run) perNodeBootstrap(fleet, workload, cloud string) bool {
	b := r.bootstrapOf(fleet, workload, cloud)
	return b != nil && b.PerNode
}

// renderBootstrap renders the first-boot file of a launch, for its first
// node, with the secrets it declares read from the environment. Its error
// names what is missing, never a secret's value.
func (r *run) renderBootstrap(fleet, workload string, offer planner.OfferKey, token string) (*providers.Bootstrap, error) {
	b := r.bootstrapOf(fleet, workload, offer.Cloud)
	if b == nil {
		return nil, nil
	}
	data, err := b.Render(schema.BootstrapData{
		Fleet: fleet, Workload: workload, Cloud: offer.Cloud, Region: offer.Region, Zone: offer.Zone,
		InstanceType: offer.InstanceType, Market: string(offer.Market), Token: token,
	}, func(name string) (string, bool) {
		v, ok := os.LookupEnv(schema.SecretEnvPrefix + name)
		// Known before it is used: whatever the run writes from here on
		// is masked with it.
		r.secrets.Add(v)
		return v, ok
	})
	if err != nil {
		return nil, r.secrets.Error(err)
	}
	return &providers.Bootstrap{Format: b.Format, Data: data, Digest: strings.TrimPrefix(b.Digest, "sha256:")}, nil
}
