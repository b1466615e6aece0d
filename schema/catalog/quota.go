// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// QuotaScope is how far a quota reaches: one region, or every region of
// its cloud at once.
type QuotaScope string

const (
	RegionScope QuotaScope = "region"
	GlobalScope QuotaScope = "global"
)

// QuotaUnit is what a quota counts.
type QuotaUnit string

const (
	VCPUs QuotaUnit = "vCPUs"
	GPUs  QuotaUnit = "GPUs"
)

// Quota is one of a cloud's limits on what may run at once.
type Quota struct {
	Cloud string `json:"cloud"`
	// Name is the cloud's own name for it, the one its quota API and its
	// errors use: an AWS Service Quotas code ("L-417A185B"), an Azure usage
	// name ("standardNDSH100v5Family", "cores"), a GCE metric
	// ("NVIDIA_H100_GPUS", "GPUS_ALL_REGIONS").
	Name string `json:"name"`
	// Description is what the cloud's console calls it.
	Description string     `json:"description"`
	Scope       QuotaScope `json:"scope"`
	Unit        QuotaUnit  `json:"unit"`
}

// QuotaUse says that each node of an instance type, bought one way, counts
// Per units against a quota: its vCPUs, or its GPUs.
type QuotaUse struct {
	Cloud        string `json:"cloud"`
	InstanceType string `json:"instanceType"`
	Market       Market `json:"market"`
	Quota        string `json:"quota"`
	Per          int    `json:"per"`
}

// UsesOf returns what a node of an instance type, bought one way, counts
// against, as the catalog says: its own family's or model's quota first.
func (c *Catalog) UsesOf(cloud, instanceType string, market Market) []QuotaUse {
	var out []QuotaUse
	for _, u := range c.QuotaUses {
		if u.Cloud == cloud && u.InstanceType == instanceType && u.Market == market {
			out = append(out, u)
		}
	}
	return out
}

// QuotaNamed returns the catalog's description of a cloud's quota.
func (c *Catalog) QuotaNamed(cloud, name string) (Quota, bool) {
	for _, q := range c.Quotas {
		if q.Cloud == cloud && q.Name == name {
			return q, true
		}
	}
	return Quota{}, false
}

// AddQuotaUses records, for every offer of the catalog, what it counts
// against (UsesFor), with the quotas named: what the snapshot and each live
// price loader do, so that every catalog carries the mapping. Uses already
// recorded are kept; the result is sorted.
func (c *Catalog) AddQuotaUses() {
	type key struct {
		cloud, instanceType string
		market              Market
	}
	seen := map[key]bool{}
	for _, u := range c.QuotaUses {
		seen[key{u.Cloud, u.InstanceType, u.Market}] = true
	}
	for _, o := range c.Offers {
		k := key{o.Cloud, o.InstanceType, o.Market}
		if seen[k] {
			continue
		}
		seen[k] = true
		c.QuotaUses = append(c.QuotaUses, UsesFor(o.Cloud, o.InstanceType, o.GPUModel, o.GPUs, o.VCPUs, o.Market)...)
	}
	for _, u := range c.QuotaUses {
		if _, ok := c.QuotaNamed(u.Cloud, u.Quota); !ok {
			if q, ok := KnownQuota(u.Cloud, u.Quota); ok {
				c.Quotas = append(c.Quotas, q)
			}
		}
	}
	// A type's uses keep UsesFor's order, its own family's or model's quota
	// first, the totals after.
	slices.SortStableFunc(c.QuotaUses, func(a, b QuotaUse) int {
		return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.Market, b.Market))
	})
	slices.SortFunc(c.Quotas, func(a, b Quota) int { return cmp.Or(cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.Name, b.Name)) })
}

// UsesFor is what a node of an instance type, bought one way, counts
// against in its cloud, by the cloud's documented rules:
//
//   - AWS counts vCPUs per region against one quota per instance family
//     class, on-demand and spot apart: P types against "Running On-Demand P
//     instances" (L-417A185B) or "All P Spot Instance Requests"
//     (L-7212CCBC), G types against the G and VT quotas, others against the
//     Standard ones.
//   - Azure counts an on-demand VM's vCPUs against its size family's quota
//     and the region's total ("cores"); a spot VM's against the region's
//     low-priority total ("lowPriorityCores") alone.
//   - GCE counts GPUs per region against the model's quota
//     (NVIDIA_H100_GPUS), or for spot its preemptible one
//     (PREEMPTIBLE_NVIDIA_H100_GPUS), and both against the project's
//     GPUS_ALL_REGIONS.
//
// A type whose family or model it does not know gets only the uses it can
// be sure of: a missing use leaves a limit out, it never invents one.
func UsesFor(cloud, instanceType, gpuModel string, gpus, vcpus int, market Market) []QuotaUse {
	use := func(quota string, per int) QuotaUse {
		return QuotaUse{Cloud: cloud, InstanceType: instanceType, Market: market, Quota: quota, Per: per}
	}
	var out []QuotaUse
	switch cloud {
	case AWS:
		if vcpus <= 0 {
			return nil
		}
		class := awsClass(instanceType)
		if market == Spot {
			out = append(out, use(awsSpotQuota[class], vcpus))
		} else {
			out = append(out, use(awsOnDemandQuota[class], vcpus))
		}
	case Azure:
		if vcpus <= 0 {
			return nil
		}
		if market == Spot {
			return []QuotaUse{use(AzureLowPriorityCores, vcpus)}
		}
		if family, ok := AzureFamily(instanceType); ok {
			out = append(out, use(family, vcpus))
		}
		out = append(out, use(AzureCores, vcpus))
	case GCP:
		metric, ok := gcpGPUMetric[gpuModel]
		if strings.HasPrefix(instanceType, "a3-megagpu-") {
			// The a3-mega's H100s have a quota of their own.
			metric = "NVIDIA_H100_MEGA_GPUS"
		}
		if !ok || gpus <= 0 {
			return nil
		}
		if market == Spot {
			metric = "PREEMPTIBLE_" + metric
		}
		out = append(out, use(metric, gpus), use(GCPGPUsAllRegions, gpus))
	}
	return out
}

// The quotas UsesFor names that are not a family's or a model's own.
const (
	AzureCores            = "cores"
	AzureLowPriorityCores = "lowPriorityCores"
	GCPGPUsAllRegions     = "GPUS_ALL_REGIONS"
)

// awsClass is the Service Quotas class of an EC2 instance type: "P", "G" (G
// and VT), "DL", "F", "Inf", "Trn" or "Standard".
func awsClass(instanceType string) string {
	family, _, _ := strings.Cut(instanceType, ".")
	switch {
	case strings.HasPrefix(family, "dl"):
		return "DL"
	case strings.HasPrefix(family, "inf"):
		return "Inf"
	case strings.HasPrefix(family, "trn"):
		return "Trn"
	case strings.HasPrefix(family, "f"):
		return "F"
	case strings.HasPrefix(family, "p"):
		return "P"
	case strings.HasPrefix(family, "g"), strings.HasPrefix(family, "vt"):
		return "G"
	}
	return "Standard"
}

var (
	awsOnDemandQuota = map[string]string{"P": "L-417A185B", "G": "L-DB2E81BA", "DL": "L-6E869C2A", "F": "L-74FC7D96",
		"Inf": "L-1945791B", "Trn": "L-2C3B7624", "Standard": "L-1216C47A"}
	awsSpotQuota = map[string]string{"P": "L-7212CCBC", "G": "L-3819A6DF", "DL": "L-85EED4F7", "F": "L-88CF9481",
		"Inf": "L-B5D1601B", "Trn": "L-6B0D517C", "Standard": "L-34B43A08"}
)

// azureFamilies maps a size series (the name without its vCPU count) to
// the quota family the Resource SKUs API gives its sizes.
var azureFamilies = []struct{ prefix, suffix, family, description string }{
	{"Standard_NC", "ads_A100_v4", "StandardNCADSA100v4Family", "Standard NCADS_A100_v4 Family vCPUs"},
	{"Standard_NC", "ads_H100_v5", "StandardNCadsH100v5Family", "Standard NCadsH100v5 Family vCPUs"},
	{"Standard_NC", "adis_H100_v5", "StandardNCadsH100v5Family", "Standard NCadsH100v5 Family vCPUs"},
	{"Standard_NC", "as_T4_v3", "standardNCASv3_T4Family", "Standard NCASv3_T4 Family vCPUs"},
	{"Standard_ND", "amsr_A100_v4", "standardNDAMSv4_A100Family", "Standard NDAMSv4_A100 Family vCPUs"},
	{"Standard_ND", "asr_v4", "standardNDASv4_A100Family", "Standard NDASv4_A100 Family vCPUs"},
	{"Standard_ND", "isr_H100_v5", "standardNDSH100v5Family", "Standard NDSH100v5 Family vCPUs"},
	{"Standard_ND", "isr_H200_v5", "standardNDISRH200V5Family", "Standard NDISRH200V5 Family vCPUs"},
	{"Standard_NV", "ads_A10_v5", "StandardNVADSA10v5Family", "Standard NVADSA10v5 Family vCPUs"},
	{"Standard_NV", "adms_A10_v5", "StandardNVADSA10v5Family", "Standard NVADSA10v5 Family vCPUs"},
	{"Standard_NC", "s_v3", "standardNCSv3Family", "Standard NCSv3 Family vCPUs"},
	{"Standard_NC", "rs_v3", "standardNCSv3Family", "Standard NCSv3 Family vCPUs"},
	{"Standard_NV", "s_v3", "standardNVSv3Family", "Standard NVSv3 Family vCPUs"},
}

// AzureFamily returns the quota family of an Azure VM size, if known.
func AzureFamily(size string) (string, bool) {
	for _, f := range azureFamilies {
		rest, ok := strings.CutPrefix(size, f.prefix)
		if !ok {
			continue
		}
		digits := strings.TrimLeft(rest, "0123456789")
		if len(digits) < len(rest) && digits == f.suffix {
			return f.family, true
		}
	}
	return "", false
}

var gcpGPUMetric = map[string]string{
	"T4":        "NVIDIA_T4_GPUS",
	"L4":        "NVIDIA_L4_GPUS",
	"A100-40GB": "NVIDIA_A100_GPUS",
	"A100-80GB": "NVIDIA_A100_80GB_GPUS",
	"H100":      "NVIDIA_H100_GPUS",
	"H200":      "NVIDIA_H200_GPUS",
}

// KnownQuota describes a quota UsesFor may name.
func KnownQuota(cloud, name string) (Quota, bool) {
	q := Quota{Cloud: cloud, Name: name, Scope: RegionScope}
	switch cloud {
	case AWS:
		q.Unit = VCPUs
		q.Description = awsQuotaDescriptions[name]
	case Azure:
		q.Unit = VCPUs
		switch name {
		case AzureCores:
			q.Description = "Total Regional vCPUs"
		case AzureLowPriorityCores:
			q.Description = "Total Regional Low-priority vCPUs"
		default:
			for _, f := range azureFamilies {
				if f.family == name {
					q.Description = f.description
				}
			}
		}
	case GCP:
		q.Unit = GPUs
		if name == GCPGPUsAllRegions {
			q.Description, q.Scope = "GPUs (all regions)", GlobalScope
			break
		}
		metric, preemptible := strings.CutPrefix(name, "PREEMPTIBLE_")
		for _, m := range append(slices.Collect(maps.Values(gcpGPUMetric)), "NVIDIA_H100_MEGA_GPUS") {
			if m == metric {
				// "NVIDIA_A100_80GB_GPUS" is "NVIDIA A100 80GB GPUs".
				q.Description = strings.ReplaceAll(strings.TrimSuffix(m, "_GPUS"), "_", " ") + " GPUs"
			}
		}
		if preemptible && q.Description != "" {
			q.Description = "Preemptible " + q.Description
		}
	}
	return q, q.Description != ""
}

var awsQuotaDescriptions = map[string]string{
	"L-417A185B": "Running On-Demand P instances",
	"L-DB2E81BA": "Running On-Demand G and VT instances",
	"L-1216C47A": "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
	"L-7212CCBC": "All P Spot Instance Requests",
	"L-3819A6DF": "All G and VT Spot Instance Requests",
	"L-34B43A08": "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
	"L-6E869C2A": "Running On-Demand DL instances",
	"L-74FC7D96": "Running On-Demand F instances",
	"L-1945791B": "Running On-Demand Inf instances",
	"L-2C3B7624": "Running On-Demand Trn instances",
	"L-85EED4F7": "All DL Spot Instance Requests",
	"L-88CF9481": "All F Spot Instance Requests",
	"L-B5D1601B": "All Inf Spot Instance Requests",
	"L-6B0D517C": "All Trn Spot Instance Requests",
}
