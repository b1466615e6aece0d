// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// zonalCatalog is the emulator's small test catalog whose offers name
// zones: p5.48xlarge on demand in us-east-1b and spot in us-east-1c only,
// dl1.24xlarge in us-east-1a only, trn1.32xlarge and g4dn.xlarge in every
// zone; the region's zone ids are not in the order of its zones.
func zonalCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	f, err := os.Open("../testdata/zonal-catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, err := catalog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// DescribeInstanceTypeOfferings answers with the zones the catalog sells a
// type in, by name and by the catalog's zone ids; RunInstances refuses the
// type in another zone with EC2's Unsupported, naming the zones that do
// sell it, and launches it in one of those.
func TestZonalOfferings(t *testing.T) {
	f := newFixture(t, sim.Config{Catalog: zonalCatalog(t)})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	offered := func(locationType types.LocationType, instanceType string) []string {
		t.Helper()
		var got []string
		p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: locationType,
			Filters:      []types.Filter{{Name: aws.String("instance-type"), Values: []string{instanceType}}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.InstanceTypeOfferings {
				got = append(got, aws.ToString(o.Location))
			}
		}
		return got
	}
	for _, tt := range []struct {
		locationType types.LocationType
		instanceType string
		want         []string
	}{
		{types.LocationTypeAvailabilityZone, "p5.48xlarge", []string{"us-east-1b", "us-east-1c"}},
		{types.LocationTypeAvailabilityZoneId, "p5.48xlarge", []string{"use1-az1", "use1-az6"}},
		{types.LocationTypeAvailabilityZone, "dl1.24xlarge", []string{"us-east-1a"}},
		{types.LocationTypeAvailabilityZoneId, "dl1.24xlarge", []string{"use1-az4"}},
		{types.LocationTypeAvailabilityZone, "trn1.32xlarge", []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{types.LocationTypeRegion, "dl1.24xlarge", []string{"us-east-1"}},
	} {
		if got := offered(tt.locationType, tt.instanceType); !slices.Equal(got, tt.want) {
			t.Errorf("%s by %s: offered in %v, want %v", tt.instanceType, tt.locationType, got, tt.want)
		}
	}

	zones, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, z := range zones.AvailabilityZones {
		pairs = append(pairs, aws.ToString(z.ZoneName)+"="+aws.ToString(z.ZoneId))
	}
	if want := []string{"us-east-1a=use1-az4", "us-east-1b=use1-az6", "us-east-1c=use1-az1"}; !slices.Equal(pairs, want) {
		t.Errorf("zones %v, want %v", pairs, want)
	}

	_, err = c.RunInstances(ctx, runInput("p5.48xlarge", "us-east-1a", "p5-in-a"))
	msg := wantAPIError(t, err, "Unsupported", 400)
	if want := "Your requested instance type (p5.48xlarge) is not supported in your requested Availability Zone (us-east-1a). Please retry your request by not specifying an Availability Zone or choosing us-east-1b."; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	// Spot is sold in c only.
	_, err = c.RunInstances(ctx, spot(runInput("p5.48xlarge", "us-east-1b", "p5-spot-in-b")))
	wantAPIError(t, err, "Unsupported", 400)
	out := mustRun(t, c, runInput("p5.48xlarge", "us-east-1b", "p5-in-b"))
	if got := aws.ToString(out.Instances[0].Placement.AvailabilityZone); got != "us-east-1b" {
		t.Errorf("launched in %s", got)
	}
	mustRun(t, c, spot(runInput("p5.48xlarge", "us-east-1c", "p5-spot-in-c")))
}

// DescribeInstanceTypes files each accelerator where EC2 does, with its
// maker and memory: Gaudis as GPUs made by Habana, Trainium as a Neuron
// device, with no GpuInfo.
func TestDescribeInstanceTypesAccelerators(t *testing.T) {
	f := newFixture(t, sim.Config{Catalog: zonalCatalog(t)})
	out, err := f.client("us-east-1", 1).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"dl1.24xlarge", "trn1.32xlarge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != 2 {
		t.Fatalf("%d types, want 2", len(out.InstanceTypes))
	}
	dl1, trn1 := out.InstanceTypes[0], out.InstanceTypes[1]
	if g := dl1.GpuInfo; g == nil || len(g.Gpus) != 1 || aws.ToString(g.Gpus[0].Name) != "Gaudi HL-205" || aws.ToString(g.Gpus[0].Manufacturer) != "Habana" ||
		aws.ToInt32(g.Gpus[0].Count) != 8 || aws.ToInt32(g.Gpus[0].MemoryInfo.SizeInMiB) != 32768 || aws.ToInt32(g.TotalGpuMemoryInMiB) != 8*32768 {
		t.Errorf("dl1.24xlarge GPUs %s", describeGPUs(dl1))
	}
	if aws.ToInt32(dl1.VCpuInfo.DefaultVCpus) != 96 || aws.ToInt64(dl1.MemoryInfo.SizeInMiB) != 768*1024 {
		t.Errorf("dl1.24xlarge vCPUs %d memory %d MiB", aws.ToInt32(dl1.VCpuInfo.DefaultVCpus), aws.ToInt64(dl1.MemoryInfo.SizeInMiB))
	}
	if n := trn1.NeuronInfo; trn1.GpuInfo != nil || n == nil || len(n.NeuronDevices) != 1 || aws.ToString(n.NeuronDevices[0].Name) != "Trainium" ||
		aws.ToInt32(n.NeuronDevices[0].Count) != 16 || aws.ToInt32(n.NeuronDevices[0].MemoryInfo.SizeInMiB) != 32768 || aws.ToInt32(n.TotalNeuronDeviceMemoryInMiB) != 16*32768 {
		t.Errorf("trn1.32xlarge accelerators %s", describeGPUs(trn1))
	}
}

func describeGPUs(it types.InstanceTypeInfo) string {
	var b strings.Builder
	if g := it.GpuInfo; g != nil {
		for _, d := range g.Gpus {
			fmt.Fprintf(&b, "gpu %s by %s ×%d of %d MiB; ", aws.ToString(d.Name), aws.ToString(d.Manufacturer), aws.ToInt32(d.Count), aws.ToInt32(d.MemoryInfo.SizeInMiB))
		}
	}
	if n := it.NeuronInfo; n != nil {
		for _, d := range n.NeuronDevices {
			fmt.Fprintf(&b, "neuron %s ×%d; ", aws.ToString(d.Name), aws.ToInt32(d.Count))
		}
	}
	return cmpOr(b.String(), "none")
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// DescribeInstanceTypes answers for every AWS type of the embedded
// catalog, not only those whose hardware the emulator has a table entry
// for: here the first Gaudi or Trainium type, which no table names.
func TestDescribeInstanceTypesAnswersForEveryCatalogType(t *testing.T) {
	cat := catalog.Default()
	i := slices.IndexFunc(cat.Offers, func(o catalog.Offer) bool {
		return o.Cloud == catalog.AWS && (strings.HasPrefix(o.InstanceType, "dl1.") || strings.HasPrefix(o.InstanceType, "trn"))
	})
	if i < 0 {
		t.Fatal("the embedded catalog has no AWS dl1 or trn type; it should have every accelerator type of the public price data")
	}
	o := cat.Offers[i]
	f := newFixture(t, sim.Config{})
	out, err := f.client(o.Region, 1).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(o.InstanceType)},
	})
	if err != nil {
		t.Fatalf("%s in %s: %v", o.InstanceType, o.Region, err)
	}
	if len(out.InstanceTypes) != 1 {
		t.Fatalf("%d types for %s", len(out.InstanceTypes), o.InstanceType)
	}
	it := out.InstanceTypes[0]
	accelerators := 0
	if it.GpuInfo != nil {
		for _, g := range it.GpuInfo.Gpus {
			accelerators += int(aws.ToInt32(g.Count))
		}
	}
	if it.NeuronInfo != nil {
		for _, d := range it.NeuronInfo.NeuronDevices {
			accelerators += int(aws.ToInt32(d.Count))
		}
	}
	if aws.ToInt32(it.VCpuInfo.DefaultVCpus) != int32(o.VCPUs) || aws.ToInt64(it.MemoryInfo.SizeInMiB) != int64(o.MemoryGiB*1024) || accelerators != o.GPUs {
		t.Errorf("%s: %d vCPUs, %d MiB, %d accelerators (%s); the catalog says %d, %g GiB, %d",
			o.InstanceType, aws.ToInt32(it.VCpuInfo.DefaultVCpus), aws.ToInt64(it.MemoryInfo.SizeInMiB), accelerators, describeGPUs(it), o.VCPUs, o.MemoryGiB, o.GPUs)
	}
}
