// SPDX-License-Identifier: Apache-2.0

package planner

import "github.com/gpufleet/gpufleet/schema/catalog"

// Quota is a limit a cloud puts on what an account runs at once, shared by
// every offer that counts against it: vCPUs or GPUs in one region, or in
// every region of the cloud. Which offers count, and by how much, is the
// catalog's (catalog.UsesFor); the limit and the use are the account's,
// read from the cloud.
type Quota struct {
	Cloud string `json:"cloud"`
	// Region is where the quota applies; "" for one over every region.
	Region string `json:"region,omitempty"`
	// Name is the cloud's name for it, as in catalog.Quota.
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Unit        catalog.QuotaUnit `json:"unit"`
	Limit       int64             `json:"limit"`
	// Used is what counts against it now, gpufleet's own nodes included,
	// as the cloud reports it; UsedUnknown when the cloud reports limits
	// only (AWS Service Quotas), and then gpufleet's own nodes are taken to
	// be all of it.
	Used int64 `json:"used"`
}

// UsedUnknown is a Quota's Used when the cloud does not say.
const UsedUnknown = -1

// QuotaCount is what one node of an offer counts against a quota.
type QuotaCount struct {
	Quota string `json:"quota"`
	Per   int64  `json:"per"`
}

// quotaCounts is what the catalog says a node of o counts against.
func quotaCounts(cat *catalog.Catalog, cloud, instanceType string, market catalog.Market) []QuotaCount {
	var out []QuotaCount
	for _, u := range cat.UsesOf(cloud, instanceType, market) {
		out = append(out, QuotaCount{Quota: u.Quota, Per: int64(u.Per)})
	}
	return out
}

// UseOf is what the live instances among instances count against q, by
// what the offers say their nodes count.
func (q Quota) UseOf(offers []Offer, instances []Instance) int64 {
	per := map[OfferKey]int64{}
	for _, o := range offers {
		if o.Cloud != q.Cloud || q.Region != "" && o.Region != q.Region {
			continue
		}
		for _, c := range o.Quotas {
			if c.Quota == q.Name {
				per[o.OfferKey] = c.Per
			}
		}
	}
	var n int64
	for _, inst := range instances {
		if inst.State.Live() {
			n += per[inst.OfferKey]
		}
	}
	return n
}
