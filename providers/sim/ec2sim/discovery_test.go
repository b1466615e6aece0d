// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func typeNames(infos []types.InstanceTypeInfo) []string {
	var out []string
	for _, it := range infos {
		out = append(out, string(it.InstanceType))
	}
	return out
}

func describeTypes(t *testing.T, c *ec2.Client, in *ec2.DescribeInstanceTypesInput) ([]types.InstanceTypeInfo, int) {
	t.Helper()
	var out []types.InstanceTypeInfo
	pages := 0
	p := ec2.NewDescribeInstanceTypesPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("DescribeInstanceTypes: %v", err)
		}
		pages++
		out = append(out, page.InstanceTypes...)
	}
	return out, pages
}

func TestDescribeInstanceTypes(t *testing.T) {
	// us-east-1 sells g6.12xlarge on demand only.
	f := newFixture(t, sim.Config{Catalog: withoutSpot(t, "us-east-1", "g6.12xlarge")})
	c := f.client("us-east-1", 1)
	all := regionTypes(f, "us-east-1")
	// where lists the region's types that keep, in name order.
	where := func(keep func(name string, typ sim.InstanceType) bool) []string {
		var out []string
		for _, name := range all {
			if typ, _ := f.world.TypeNamed(catalog.AWS, name); keep(name, typ) {
				out = append(out, name)
			}
		}
		if len(out) == 0 {
			t.Fatal("no type of us-east-1 to list")
		}
		return out
	}
	spotIn := map[string]bool{}
	for _, o := range f.world.Catalog().Offers {
		if o.Cloud == catalog.AWS && o.Region == "us-east-1" && o.Market == catalog.Spot {
			spotIn[o.InstanceType] = true
		}
	}
	g6Spot := where(func(name string, _ sim.InstanceType) bool { return strings.HasPrefix(name, "g6") && spotIn[name] })
	if slices.Contains(g6Spot, "g6.12xlarge") || !slices.Contains(all, "g6.12xlarge") {
		t.Fatalf("g6 types sold as spot: %v, want g6.12xlarge sold on demand only", g6Spot)
	}
	filter := func(name string, values ...string) []types.Filter {
		return []types.Filter{{Name: aws.String(name), Values: values}}
	}
	tests := []struct {
		name      string
		in        *ec2.DescribeInstanceTypesInput
		want      []string
		wantPages int
	}{
		{name: "every type of the region, in one page", in: &ec2.DescribeInstanceTypesInput{}, want: all, wantPages: 1},
		{name: "pages of five", in: &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(5)}, want: all, wantPages: (len(all) + 4) / 5},
		{name: "by name, sorted", in: &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"p5.48xlarge", "g4dn.xlarge"}}, want: []string{"g4dn.xlarge", "p5.48xlarge"}, wantPages: 1},
		{name: "with EFA", in: &ec2.DescribeInstanceTypesInput{Filters: filter("network-info.efa-supported", "true")},
			want: where(func(name string, _ sim.InstanceType) bool { return catalog.EFAInterfaces(name) > 0 }), wantPages: 1},
		{name: "by vCPUs", in: &ec2.DescribeInstanceTypesInput{Filters: filter("vcpu-info.default-vcpus", "192")},
			want: where(func(_ string, typ sim.InstanceType) bool { return typ.VCPUs == 192 }), wantPages: 1},
		{name: "by wildcard and usage class", in: &ec2.DescribeInstanceTypesInput{Filters: append(filter("instance-type", "g6*"), types.Filter{Name: aws.String("supported-usage-class"), Values: []string{"spot"}})},
			want: g6Spot, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pages := describeTypes(t, c, tt.in)
			want := slices.DeleteFunc(slices.Clone(tt.want), func(name string) bool { return !slices.Contains(all, name) })
			if !slices.Equal(typeNames(got), want) || pages != tt.wantPages {
				t.Errorf("got %v in %d pages, want %v in %d", typeNames(got), pages, want, tt.wantPages)
			}
		})
	}
}

// What DescribeInstanceTypes says of a type agrees with the catalog and
// with what RunInstances takes of it.
func TestInstanceTypeInfoMatchesTheCatalog(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	got, _ := describeTypes(t, c, &ec2.DescribeInstanceTypesInput{})
	for _, it := range got {
		name := string(it.InstanceType)
		t.Run(name, func(t *testing.T) {
			typ, ok := f.world.TypeNamed(catalog.AWS, name)
			if !ok {
				t.Fatal("not in the catalog")
			}
			v, n, gpu := it.VCpuInfo, it.NetworkInfo, it.GpuInfo
			if aws.ToInt32(v.DefaultVCpus) != int32(typ.VCPUs) || aws.ToInt32(v.DefaultCores)*aws.ToInt32(v.DefaultThreadsPerCore) != int32(typ.VCPUs) {
				t.Errorf("vCPUs %+v, the catalog's %d", v, typ.VCPUs)
			}
			if aws.ToInt64(it.MemoryInfo.SizeInMiB) != int64(typ.MemoryGiB*1024) {
				t.Errorf("memory %d MiB, the catalog's %v GiB", aws.ToInt64(it.MemoryInfo.SizeInMiB), typ.MemoryGiB)
			}
			// EC2 files GPUs, Neuron chips and FPGAs apart, each under its own info.
			switch typ.GPU.Kind {
			case sim.KindNeuron:
				nr := it.NeuronInfo
				if gpu != nil || it.FpgaInfo != nil || nr == nil || len(nr.NeuronDevices) != 1 || aws.ToInt32(nr.NeuronDevices[0].Count) != int32(typ.GPUs) {
					t.Errorf("Neuron %+v (GPUs %+v, FPGAs %+v), the catalog's %d %s", nr, gpu, it.FpgaInfo, typ.GPUs, typ.GPUModel)
				}
			case sim.KindFPGA:
				fp := it.FpgaInfo
				if gpu != nil || it.NeuronInfo != nil || fp == nil || len(fp.Fpgas) != 1 || aws.ToInt32(fp.Fpgas[0].Count) != int32(typ.GPUs) {
					t.Errorf("FPGAs %+v (GPUs %+v, Neuron %+v), the catalog's %d %s", fp, gpu, it.NeuronInfo, typ.GPUs, typ.GPUModel)
				}
			default:
				if gpu == nil || len(gpu.Gpus) != 1 || aws.ToInt32(gpu.Gpus[0].Count) != int32(typ.GPUs) || aws.ToInt32(gpu.Gpus[0].MemoryInfo.SizeInMiB) == 0 ||
					aws.ToInt32(gpu.TotalGpuMemoryInMiB) != int32(typ.GPUs)*aws.ToInt32(gpu.Gpus[0].MemoryInfo.SizeInMiB) {
					t.Errorf("GPUs %+v, the catalog's %d %s", gpu, typ.GPUs, typ.GPUModel)
				}
			}
			efa := catalog.EFAInterfaces(name)
			if aws.ToBool(n.EfaSupported) != (efa > 0) || (efa > 0) != (n.EfaInfo != nil) ||
				n.EfaInfo != nil && aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces) != int32(efa) {
				t.Errorf("EFA %v %+v, the catalog's %d", aws.ToBool(n.EfaSupported), n.EfaInfo, efa)
			}
			if int(aws.ToInt32(n.MaximumNetworkCards)) < efa || len(n.NetworkCards) != int(aws.ToInt32(n.MaximumNetworkCards)) || aws.ToString(n.NetworkPerformance) == "" {
				t.Errorf("network %+v for %d EFAs", n, efa)
			}
			// EC2 states a sustained clock speed for every family the
			// catalog sells.
			if clock := aws.ToFloat64(it.ProcessorInfo.SustainedClockSpeedInGhz); aws.ToString(it.ProcessorInfo.Manufacturer) == "" || clock <= 0 || it.Hypervisor != types.InstanceTypeHypervisorNitro {
				t.Errorf("processor %+v hypervisor %s", it.ProcessorInfo, it.Hypervisor)
			}
		})
	}
}

// TestDescribeInstanceTypesPublishedSpecs checks types of the catalog's
// wider families against EC2's published specifications, which a type
// described from its family's defaults would miss: an Arm type's
// architecture, boot and threads, a large size's network and storage.
func TestDescribeInstanceTypesPublishedSpecs(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	tests := []struct {
		name string
		// want is arch, boot modes, cores and threads a core, network,
		// interfaces, cards, addresses an interface, disks, EBS at most.
		want string
	}{
		{name: "g5g.xlarge", want: "[arm64] [uefi] 4x1 | Up to 10 Gigabit 4/1/15 | [] | 4750 Mbps 20000 IOPS"},
		{name: "g4dn.12xlarge", want: "[x86_64] [legacy-bios uefi] 24x2 | 50 Gigabit 8/1/30 | [1x900GB] | 9500 Mbps 40000 IOPS"},
		{name: "dl1.24xlarge", want: "[x86_64] [legacy-bios] 48x2 | 4x 100 Gigabit 60/4/50 | [4x1000GB] | 19000 Mbps 80000 IOPS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(tt.name)}})
			if err != nil || len(out.InstanceTypes) != 1 {
				t.Fatalf("DescribeInstanceTypes(%s): %v %+v", tt.name, err, out)
			}
			it := out.InstanceTypes[0]
			var disks []string
			if it.InstanceStorageInfo != nil {
				for _, d := range it.InstanceStorageInfo.Disks {
					disks = append(disks, fmt.Sprintf("%dx%dGB", aws.ToInt32(d.Count), aws.ToInt64(d.SizeInGB)))
				}
			}
			n, e := it.NetworkInfo, it.EbsInfo.EbsOptimizedInfo
			got := fmt.Sprintf("%v %v %dx%d | %s %d/%d/%d | %v | %d Mbps %d IOPS", it.ProcessorInfo.SupportedArchitectures, it.SupportedBootModes,
				aws.ToInt32(it.VCpuInfo.DefaultCores), aws.ToInt32(it.VCpuInfo.DefaultThreadsPerCore),
				aws.ToString(n.NetworkPerformance), aws.ToInt32(n.MaximumNetworkInterfaces), aws.ToInt32(n.MaximumNetworkCards), aws.ToInt32(n.Ipv4AddressesPerInterface),
				disks, aws.ToInt32(e.MaximumBandwidthInMbps), aws.ToInt32(e.MaximumIops))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDescribeInstanceTypesErrors(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	tests := []struct {
		name     string
		in       *ec2.DescribeInstanceTypesInput
		wantCode string
		wantMsg  string
	}{
		{name: "unknown type", in: &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{"p9.96xlarge", "g4dn.xlarge", "x9.metal"}},
			wantCode: "InvalidInstanceType", wantMsg: "The following supplied instance types do not exist: [p9.96xlarge, x9.metal]"},
		{name: "page too large", in: &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(101)}, wantCode: "InvalidParameterValue"},
		{name: "unknown filter", in: &ec2.DescribeInstanceTypesInput{Filters: []types.Filter{{Name: aws.String("gpus"), Values: []string{"8"}}}},
			wantCode: "InvalidParameterValue", wantMsg: "The filter 'gpus' is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.DescribeInstanceTypes(ctx, tt.in)
			if msg := wantAPIError(t, err, tt.wantCode, http.StatusBadRequest); tt.wantMsg != "" && msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
		})
	}
	// A type the catalog has only elsewhere is unknown here, unless asked
	// for as unsupported in the region.
	west := f.client("us-west-2", 1)
	var elsewhere string
	for _, o := range f.world.Catalog().Offers {
		if o.Cloud == catalog.AWS && !slices.Contains(regionTypes(f, "us-west-2"), o.InstanceType) {
			elsewhere = o.InstanceType
		}
	}
	if elsewhere == "" {
		t.Skip("every type of the catalog is in us-west-2")
	}
	_, err := west.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(elsewhere)}})
	wantAPIError(t, err, "InvalidInstanceType", http.StatusBadRequest)
	out, err := west.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []types.InstanceType{types.InstanceType(elsewhere)}, IncludeUnsupportedInRegion: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != 1 || aws.ToBool(out.InstanceTypes[0].SupportedInRegion) {
		t.Errorf("%s with IncludeUnsupportedInRegion: %+v", elsewhere, out.InstanceTypes)
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("eu-west-1", 1)
	ctx := context.Background()
	tests := []struct {
		name     string
		in       *ec2.DescribeAvailabilityZonesInput
		want     []string // "name id"
		wantCode string
	}{
		{name: "the region's zones", in: &ec2.DescribeAvailabilityZonesInput{}, want: []string{"eu-west-1a euw1-az1", "eu-west-1b euw1-az2", "eu-west-1c euw1-az3"}},
		{name: "all zones: the catalog has no Local Zones", in: &ec2.DescribeAvailabilityZonesInput{AllAvailabilityZones: aws.Bool(true)},
			want: []string{"eu-west-1a euw1-az1", "eu-west-1b euw1-az2", "eu-west-1c euw1-az3"}},
		{name: "by name and by id", in: &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"eu-west-1c"}, ZoneIds: []string{"euw1-az1"}},
			want: []string{"eu-west-1a euw1-az1", "eu-west-1c euw1-az3"}},
		{name: "filtered", in: &ec2.DescribeAvailabilityZonesInput{Filters: []types.Filter{
			{Name: aws.String("state"), Values: []string{"available"}}, {Name: aws.String("zone-id"), Values: []string{"euw1-az2"}},
		}}, want: []string{"eu-west-1b euw1-az2"}},
		{name: "another region's zone", in: &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1a"}}, wantCode: "InvalidParameterValue"},
		{name: "unknown filter", in: &ec2.DescribeAvailabilityZonesInput{Filters: []types.Filter{{Name: aws.String("size"), Values: []string{"x"}}}}, wantCode: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeAvailabilityZones(ctx, tt.in)
			if tt.wantCode != "" {
				wantAPIError(t, err, tt.wantCode, http.StatusBadRequest)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, z := range out.AvailabilityZones {
				got = append(got, aws.ToString(z.ZoneName)+" "+aws.ToString(z.ZoneId))
				if aws.ToString(z.RegionName) != "eu-west-1" || z.State != types.AvailabilityZoneStateAvailable || aws.ToString(z.ZoneType) != "availability-zone" ||
					z.OptInStatus != types.AvailabilityZoneOptInStatusOptInNotRequired || aws.ToString(z.NetworkBorderGroup) != "eu-west-1" ||
					aws.ToString(z.GroupLongName) != "Europe (Ireland) 1" {
					t.Errorf("zone %+v", z)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("zones %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeRegions(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	var all []string
	for _, r := range f.world.Catalog().RegionsOf(catalog.AWS) {
		all = append(all, r.Name)
	}
	tests := []struct {
		name     string
		in       *ec2.DescribeRegionsInput
		want     []string
		wantCode string
	}{
		{name: "every region", in: &ec2.DescribeRegionsInput{}, want: all},
		{name: "all regions: the catalog has no opt-in ones", in: &ec2.DescribeRegionsInput{AllRegions: aws.Bool(true)}, want: all},
		{name: "by name", in: &ec2.DescribeRegionsInput{RegionNames: []string{"us-west-2", "eu-west-1"}}, want: []string{"eu-west-1", "us-west-2"}},
		{name: "by endpoint", in: &ec2.DescribeRegionsInput{Filters: []types.Filter{{Name: aws.String("endpoint"), Values: []string{"*.us-east-*"}}}}, want: []string{"us-east-1", "us-east-2"}},
		{name: "unknown region", in: &ec2.DescribeRegionsInput{RegionNames: []string{"mars-north-1"}}, wantCode: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeRegions(ctx, tt.in)
			if tt.wantCode != "" {
				if msg := wantAPIError(t, err, tt.wantCode, http.StatusBadRequest); msg != "Invalid region: [mars-north-1]" {
					t.Errorf("message %q", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range out.Regions {
				got = append(got, aws.ToString(r.RegionName))
				if aws.ToString(r.Endpoint) != "ec2."+aws.ToString(r.RegionName)+".amazonaws.com" || aws.ToString(r.OptInStatus) != "opt-in-not-required" {
					t.Errorf("region %+v", r)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("regions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeInstanceTypeOfferingsByZoneID(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	out, err := c.DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZoneId,
		Filters:      []types.Filter{{Name: aws.String("instance-type"), Values: []string{"g4dn.xlarge"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range out.InstanceTypeOfferings {
		got = append(got, aws.ToString(o.Location))
	}
	// The ids of the zones the catalog sells it in, as the region pairs
	// its zones with ids.
	r, _ := catalog.Default().Region(catalog.AWS, "us-east-1")
	var want []string
	for _, z := range catalogZones(t, "us-east-1", "g4dn.xlarge", catalog.OnDemand, catalog.Spot) {
		want = append(want, r.ZoneIDs[slices.Index(r.Zones, z)])
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("offered in %v, want %v", got, want)
	}
}

func TestDescribeInstanceStatus(t *testing.T) {
	f := newFixture(t, sim.Config{PendingFor: time.Minute})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	var running []string
	for i := range 7 {
		running = append(running, aws.ToString(mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", fmt.Sprintf("s-%d", i))).Instances[0].InstanceId))
	}
	// Running after a minute, and their status checks passed three
	// minutes after that.
	f.clock.Advance(4 * time.Minute)
	pending := aws.ToString(mustRun(t, c, runInput("g4dn.xlarge", "us-east-1b", "s-pending")).Instances[0].InstanceId)
	ended := running[6]
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{ended}}); err != nil {
		t.Fatal(err)
	}
	running = running[:6]

	list := func(in *ec2.DescribeInstanceStatusInput) (map[string]types.InstanceStatus, []string, int) {
		byID := map[string]types.InstanceStatus{}
		var order []string
		pages := 0
		p := ec2.NewDescribeInstanceStatusPaginator(c, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("DescribeInstanceStatus: %v", err)
			}
			pages++
			for _, st := range page.InstanceStatuses {
				byID[aws.ToString(st.InstanceId)] = st
				order = append(order, aws.ToString(st.InstanceId))
			}
		}
		return byID, order, pages
	}
	tests := []struct {
		name      string
		in        *ec2.DescribeInstanceStatusInput
		want      []string
		wantPages int
	}{
		{name: "running only", in: &ec2.DescribeInstanceStatusInput{}, want: running, wantPages: 1},
		{name: "running only, in pages of five", in: &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)}, want: running, wantPages: 2},
		{name: "all", in: &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true)}, want: append(slices.Clone(running), ended, pending), wantPages: 1},
		{name: "by id, not running", in: &ec2.DescribeInstanceStatusInput{InstanceIds: []string{pending, running[0]}}, want: running[:1], wantPages: 1},
		{name: "by id, all", in: &ec2.DescribeInstanceStatusInput{InstanceIds: []string{pending}, IncludeAllInstances: aws.Bool(true)}, want: []string{pending}, wantPages: 1},
		{name: "by status", in: &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), Filters: []types.Filter{
			{Name: aws.String("instance-status.status"), Values: []string{"initializing", "not-applicable"}},
		}}, want: []string{ended, pending}, wantPages: 1},
		{name: "by zone id", in: &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), Filters: []types.Filter{
			{Name: aws.String("availability-zone-id"), Values: []string{"use1-az2"}},
		}}, want: []string{pending}, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byID, order, pages := list(tt.in)
			if !slices.Equal(order, tt.want) || pages != tt.wantPages {
				t.Errorf("got %v in %d pages, want %v in %d", order, pages, tt.want, tt.wantPages)
			}
			for id, st := range byID {
				want := map[string]types.SummaryStatus{pending: types.SummaryStatusInitializing, ended: types.SummaryStatusNotApplicable}[id]
				if want == "" {
					want = types.SummaryStatusOk
				}
				if st.InstanceStatus.Status != want || st.SystemStatus.Status != want {
					t.Errorf("%s (%s): instance %s system %s, want %s", id, st.InstanceState.Name, st.InstanceStatus.Status, st.SystemStatus.Status, want)
				}
			}
		})
	}
	_, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{pending}, MaxResults: aws.Int32(5)})
	wantAPIError(t, err, "InvalidParameterCombination", http.StatusBadRequest)
	_, err = c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	wantAPIError(t, err, "InvalidInstanceID.NotFound", http.StatusBadRequest)
}
