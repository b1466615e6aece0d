// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"strconv"
	"strings"
	"testing"
)

func TestUsesForFollowsEachCloudsRules(t *testing.T) {
	for _, tt := range []struct {
		cloud, instanceType, model string
		gpus, vcpus                int
		market                     Market
		want                       string
	}{
		{AWS, "p5.48xlarge", "H100", 8, 192, OnDemand, "L-417A185B×192"},
		{AWS, "p5.48xlarge", "H100", 8, 192, Spot, "L-7212CCBC×192"},
		{AWS, "g6.2xlarge", "L4", 1, 8, OnDemand, "L-DB2E81BA×8"},
		{AWS, "g6e.48xlarge", "L40S", 8, 192, Spot, "L-3819A6DF×192"},
		{AWS, "m7i.large", "", 0, 2, OnDemand, "L-1216C47A×2"},
		{AWS, "trn1.32xlarge", "Trainium", 16, 128, OnDemand, "L-2C3B7624×128"},
		{AWS, "inf2.xlarge", "Inferentia2", 1, 4, Spot, "L-B5D1601B×4"},
		{AWS, "dl1.24xlarge", "Gaudi", 8, 96, OnDemand, "L-6E869C2A×96"},
		{AWS, "f1.2xlarge", "VU9P", 1, 8, Spot, "L-88CF9481×8"},
		{GCP, "a3-megagpu-8g", "H100", 8, 208, Spot, "PREEMPTIBLE_NVIDIA_H100_MEGA_GPUS×8 GPUS_ALL_REGIONS×8"},
		{Azure, "Standard_ND96isr_H100_v5", "H100", 8, 96, OnDemand, "standardNDSH100v5Family×96 cores×96"},
		{Azure, "Standard_NC80adis_H100_v5", "H100", 2, 80, OnDemand, "StandardNCadsH100v5Family×80 cores×80"},
		{Azure, "Standard_ND96isr_H100_v5", "H100", 8, 96, Spot, "lowPriorityCores×96"},
		// A family it does not know: the regional total, which it does.
		{Azure, "Standard_NG32ads_V620_v1", "", 1, 32, OnDemand, "cores×32"},
		{GCP, "a3-highgpu-8g", "H100", 8, 208, OnDemand, "NVIDIA_H100_GPUS×8 GPUS_ALL_REGIONS×8"},
		{GCP, "g2-standard-48", "L4", 4, 48, Spot, "PREEMPTIBLE_NVIDIA_L4_GPUS×4 GPUS_ALL_REGIONS×4"},
		// A model with no known metric: nothing, rather than a guess.
		{GCP, "n1-standard-8", "V100", 1, 8, OnDemand, ""},
		{AWS, "p5.48xlarge", "H100", 8, 0, OnDemand, ""},
	} {
		var got []string
		for _, u := range UsesFor(tt.cloud, tt.instanceType, tt.model, tt.gpus, tt.vcpus, tt.market) {
			got = append(got, u.Quota+"×"+strconv.Itoa(u.Per))
			if _, ok := KnownQuota(u.Cloud, u.Quota); !ok {
				t.Errorf("%s %s: uses %s, which KnownQuota does not describe", tt.cloud, tt.instanceType, u.Quota)
			}
		}
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("UsesFor(%s %s %s) = %q, want %q", tt.cloud, tt.instanceType, tt.market, s, tt.want)
		}
	}
}

func TestTheSnapshotSaysWhatEveryOfferCountsAgainst(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, o := range c.Offers {
		uses := c.UsesOf(o.Cloud, o.InstanceType, o.Market)
		if o.Cloud == Lambda || o.Cloud == OCI {
			// Lambda has no quota API to read limits from; OCI's service
			// limits on GPU shapes are per availability domain, which no
			// quota of the catalog is, and are learned from a launch's
			// LimitExceeded instead.
			if len(uses) > 0 {
				t.Errorf("%s %s counts against %v, but the catalog keeps no %s quotas", o.Cloud, o.InstanceType, uses, o.Cloud)
			}
			continue
		}
		if len(uses) == 0 {
			t.Errorf("%s %s %s counts against no quota", o.Cloud, o.InstanceType, o.Market)
		}
		for _, u := range uses {
			q, ok := c.QuotaNamed(u.Cloud, u.Quota)
			if !ok {
				t.Fatalf("%s %s: quota %s undescribed", o.Cloud, o.InstanceType, u.Quota)
			}
			if want := map[QuotaUnit]int{VCPUs: o.VCPUs, GPUs: o.GPUs}[q.Unit]; u.Per != want {
				t.Errorf("%s %s counts %d against %s, want its %d %s", o.Cloud, o.InstanceType, u.Per, u.Quota, want, q.Unit)
			}
		}
	}
}

func TestValidateNamesBadQuotas(t *testing.T) {
	c := Default()
	c.Quotas = append(c.Quotas, Quota{Cloud: AWS, Name: "L-X", Scope: "zone", Unit: VCPUs}, Quota{Cloud: AWS, Name: "L-Y", Scope: RegionScope, Unit: "cores"})
	c.QuotaUses = append(c.QuotaUses, QuotaUse{Cloud: AWS, InstanceType: "p5.48xlarge", Market: OnDemand, Quota: "L-NOPE", Per: 1},
		QuotaUse{Cloud: AWS, InstanceType: "p5.48xlarge", Market: OnDemand, Quota: "L-417A185B", Per: -4})
	err := c.Validate()
	for _, want := range []string{`scope "zone"`, `unit "cores"`, `quota "L-NOPE" is not among`, "counts -4 against L-417A185B"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %s", err, want)
		}
	}
}
