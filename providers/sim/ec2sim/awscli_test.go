// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/providers/sim/simtls"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// The AWS CLI, a client nobody here wrote, drives the front as a user
// would: every distinct CLI on the machine (the pip one on PATH, Debian's
// /usr/bin/aws) runs each case. Its JSON output has the model's member
// names, which the SDK's output types read back, so the cases assert on
// parsed answers; its errors are "An error occurred (CODE) when calling
// the OP operation: MESSAGE", parsed the same way.

// cliCase is one thing a user does with the CLI, on a fresh world.
type cliCase struct {
	name string
	cfg  sim.Config
	run  func(t *testing.T, f *fixture, s *session)
}

func TestAWSCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI, a second or so a command")
	}
	clis := awsCLIs(t)
	cases := []cliCase{
		{name: "run-instances repeats with its client token", run: cliClientToken},
		{name: "describe-instances filters and pages", run: cliDescribePaging},
		{name: "describe-instance-types", run: cliInstanceTypes},
		{name: "describe-availability-zones and describe-regions", run: cliZonesAndRegions},
		{name: "describe-instance-type-offerings", run: cliOfferings},
		{name: "pending, then running", cfg: sim.Config{PendingFor: 2 * time.Minute}, run: cliPending},
		{name: "terminate: shutting-down, then terminated", cfg: sim.Config{OperationTime: time.Minute}, run: cliTerminate},
		{name: "a stock-out is InsufficientInstanceCapacity", run: cliCapacity},
		{name: "throttling is RequestLimitExceeded", run: cliThrottle},
		{name: "unknown subnet and security group", run: cliUnknownNetwork},
		{name: "a network of its own", cfg: sim.Config{OperationTime: time.Minute}, run: cliOwnNetwork},
		{name: "root device and block devices", run: cliBlockDevices},
		{name: "create-tags adds to an instance's tags", run: cliCreateTags},
		{name: "--dry-run checks the call first", run: cliDryRun},
		{name: "describe-spot-instance-requests", run: cliSpotRequests},
	}
	runCLICases(t, clis, cases)
}

// runCLICases runs every case with every CLI, each on a world of its own.
func runCLICases(t *testing.T, clis []awsCLI, cases []cliCase) {
	for _, cli := range clis {
		t.Run(cli.version, func(t *testing.T) {
			t.Logf("%s at %s", cli.version, cli.path)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					// Each case has a world of its own, and its time is
					// mostly the CLI's start-up.
					t.Parallel()
					f := newFixture(t, c.cfg)
					c.run(t, f, newSession(t, cli, f.url, ""))
				})
			}
		})
	}
}

// The emulator over https, trusted through AWS_CA_BUNDLE as a user of
// `gpufleet sim serve --tls` trusts it.
func TestAWSCLIOverHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI, a second or so a command")
	}
	clis := awsCLIs(t)
	files, err := simtls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := files.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	world, err := sim.New(sim.Config{Clock: sim.NewManualClock(start)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(ec2sim.New(world, ec2sim.Options{}))
	srv.TLS = cfg
	// The case without the bundle makes the CLI hang up mid-handshake, which
	// the server would log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, cli := range clis {
		t.Run(cli.version, func(t *testing.T) {
			s := newSession(t, cli, srv.URL, files.CA)
			var zones ec2.DescribeAvailabilityZonesOutput
			s.json(&zones, "describe-availability-zones")
			if len(zones.AvailabilityZones) != 6 {
				t.Errorf("%d zones in us-east-1 over https, want 6", len(zones.AvailabilityZones))
			}
			var run ec2.RunInstancesOutput
			s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--client-token", "https-"+cli.version)
			if len(run.Instances) != 1 {
				t.Fatalf("launched %d instances over https", len(run.Instances))
			}
			// Without the bundle the CLI refuses the emulator's certificate.
			cmd := exec.Command(cli.path, "ec2", "describe-regions", "--endpoint-url", srv.URL)
			cmd.Env = cliEnv(t, "")
			if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(strings.ToLower(string(out)), "ssl") {
				t.Errorf("without AWS_CA_BUNDLE: err %v, output %s; want an SSL failure", err, out)
			}
		})
	}
}

func cliClientToken(t *testing.T, f *fixture, s *session) {
	launch := []string{"run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--count", "2", "--client-token", "cli-token-1"}
	var first, again ec2.RunInstancesOutput
	s.json(&first, launch...)
	s.json(&again, launch...)
	if len(first.Instances) != 2 || aws.ToString(first.ReservationId) != aws.ToString(again.ReservationId) || !slices.Equal(ids(first.Instances), ids(again.Instances)) {
		t.Errorf("a repeat answered reservation %s %v, the launch %s %v", aws.ToString(again.ReservationId), ids(again.Instances), aws.ToString(first.ReservationId), ids(first.Instances))
	}
	if n := len(f.world.List(catalog.AWS, nil)); n != 2 {
		t.Errorf("the world holds %d instances after a repeated launch of 2", n)
	}
	for _, inst := range first.Instances {
		if aws.ToString(inst.ClientToken) != "cli-token-1" || inst.State.Name != types.InstanceStateNamePending {
			t.Errorf("instance %s: token %q state %s", aws.ToString(inst.InstanceId), aws.ToString(inst.ClientToken), inst.State.Name)
		}
	}
	// The same token with another parameter is EC2's mismatch.
	changed := slices.Clone(launch)
	changed[4] = "g6.2xlarge"
	s.fails("IdempotentParameterMismatch", changed...)
}

// Twelve reservations carry team=ml and three do not: the filtered
// listing, page by page through the CLI's tokens, sees each of the twelve
// once; so does the CLI's own paging.
func cliDescribePaging(t *testing.T, f *fixture, s *session) {
	c := f.client("us-east-1", 1)
	var want []string
	for i := range 15 {
		in := runInput("g4dn.xlarge", "us-east-1b", fmt.Sprintf("seed-%d", i))
		if i%5 != 4 {
			in = withTags(in, "team", "ml")
		}
		out := mustRun(t, c, in)
		if i%5 != 4 {
			want = append(want, aws.ToString(out.Instances[0].InstanceId))
		}
	}
	filter := []string{"--filters", "Name=tag:team,Values=ml", "Name=instance-state-name,Values=pending,running"}

	seen := map[string]int{}
	var order []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages of 4")
		}
		args := append([]string{"describe-instances", "--page-size", "5", "--max-items", "4"}, filter...)
		if token != "" {
			args = append(args, "--starting-token", token)
		}
		var page ec2.DescribeInstancesOutput
		s.json(&page, args...)
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				seen[aws.ToString(inst.InstanceId)]++
				order = append(order, aws.ToString(inst.InstanceId))
			}
		}
		if token = aws.ToString(page.NextToken); token == "" {
			break
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("paged listing %v, want %v", order, want)
	}

	var all ec2.DescribeInstancesOutput
	s.json(&all, append([]string{"describe-instances", "--page-size", "5"}, filter...)...)
	var got []string
	for _, r := range all.Reservations {
		got = append(got, ids(r.Instances)...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the CLI's own paging listed %v, want %v", got, want)
	}
	s.fails("InvalidParameterValue", "describe-instances", "--filters", "Name=no-such-filter,Values=x")
}

func cliInstanceTypes(t *testing.T, f *fixture, s *session) {
	var out ec2.DescribeInstanceTypesOutput
	s.json(&out, "describe-instance-types", "--instance-types", "p5.48xlarge", "g4dn.xlarge")
	if len(out.InstanceTypes) != 2 {
		t.Fatalf("%d types, want 2", len(out.InstanceTypes))
	}
	byName := map[types.InstanceType]types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		byName[it.InstanceType] = it
	}
	p5, g4 := byName["p5.48xlarge"], byName["g4dn.xlarge"]
	if p5.GpuInfo == nil || len(p5.GpuInfo.Gpus) != 1 || aws.ToString(p5.GpuInfo.Gpus[0].Name) != "H100" ||
		aws.ToInt32(p5.GpuInfo.Gpus[0].Count) != 8 || aws.ToString(p5.GpuInfo.Gpus[0].Manufacturer) != "NVIDIA" ||
		aws.ToInt32(p5.GpuInfo.TotalGpuMemoryInMiB) != 8*aws.ToInt32(p5.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) {
		t.Errorf("p5.48xlarge GPUs %+v", p5.GpuInfo)
	}
	if aws.ToInt32(p5.VCpuInfo.DefaultVCpus) != 192 || aws.ToInt64(p5.MemoryInfo.SizeInMiB) != 2048*1024 {
		t.Errorf("p5.48xlarge vCPUs %d memory %d MiB", aws.ToInt32(p5.VCpuInfo.DefaultVCpus), aws.ToInt64(p5.MemoryInfo.SizeInMiB))
	}
	if n := p5.NetworkInfo; !aws.ToBool(n.EfaSupported) || n.EfaInfo == nil || aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces) != 32 || aws.ToInt32(n.MaximumNetworkCards) != 32 {
		t.Errorf("p5.48xlarge network %+v", n)
	}
	if aws.ToBool(g4.NetworkInfo.EfaSupported) || g4.NetworkInfo.EfaInfo != nil {
		t.Errorf("g4dn.xlarge has EFA: %+v", g4.NetworkInfo)
	}
	if !slices.Equal(g4.SupportedUsageClasses, []types.UsageClassType{types.UsageClassTypeOnDemand, types.UsageClassTypeSpot}) ||
		!slices.Contains(g4.ProcessorInfo.SupportedArchitectures, types.ArchitectureTypeX8664) || !aws.ToBool(g4.CurrentGeneration) {
		t.Errorf("g4dn.xlarge classes %v architectures %v current %v", g4.SupportedUsageClasses, g4.ProcessorInfo.SupportedArchitectures, aws.ToBool(g4.CurrentGeneration))
	}

	// The CLI pages through every type of the region, five at a time; a
	// filter keeps the types with EFA.
	var all, efa ec2.DescribeInstanceTypesOutput
	s.json(&all, "describe-instance-types", "--page-size", "5")
	s.json(&efa, "describe-instance-types", "--filters", "Name=network-info.efa-supported,Values=true")
	var names, withEFA []string
	for _, it := range all.InstanceTypes {
		names = append(names, string(it.InstanceType))
		if catalog.EFAInterfaces(string(it.InstanceType)) > 0 {
			withEFA = append(withEFA, string(it.InstanceType))
		}
	}
	if want := regionTypes(f, "us-east-1"); !slices.Equal(names, want) {
		t.Errorf("types %v, want the region's %v", names, want)
	}
	var gotEFA []string
	for _, it := range efa.InstanceTypes {
		gotEFA = append(gotEFA, string(it.InstanceType))
	}
	if !slices.Equal(gotEFA, withEFA) || len(gotEFA) == 0 {
		t.Errorf("types with EFA %v, want %v", gotEFA, withEFA)
	}
	s.fails("InvalidInstanceType", "describe-instance-types", "--instance-types", "p9.96xlarge")
}

// regionTypes are the types the catalog offers in a region, sorted.
func regionTypes(f *fixture, region string) []string {
	var out []string
	for _, o := range f.world.Catalog().Offers {
		if o.Cloud == catalog.AWS && o.Region == region && !slices.Contains(out, o.InstanceType) {
			out = append(out, o.InstanceType)
		}
	}
	slices.Sort(out)
	return out
}

func cliZonesAndRegions(t *testing.T, f *fixture, s *session) {
	var zones ec2.DescribeAvailabilityZonesOutput
	s.json(&zones, "describe-availability-zones", "--all-availability-zones")
	region, _ := f.world.Region(catalog.AWS, "us-east-1")
	var names []string
	for i, z := range zones.AvailabilityZones {
		names = append(names, aws.ToString(z.ZoneName))
		if aws.ToString(z.RegionName) != "us-east-1" || z.State != types.AvailabilityZoneStateAvailable ||
			aws.ToString(z.ZoneType) != "availability-zone" || z.OptInStatus != types.AvailabilityZoneOptInStatusOptInNotRequired ||
			aws.ToString(z.ZoneId) != fmt.Sprintf("use1-az%d", i+1) {
			t.Errorf("zone %+v", z)
		}
	}
	if !slices.Equal(names, region.Zones) {
		t.Errorf("zones %v, want %v", names, region.Zones)
	}
	var one ec2.DescribeAvailabilityZonesOutput
	s.json(&one, "describe-availability-zones", "--filters", "Name=zone-name,Values=us-east-1c")
	if len(one.AvailabilityZones) != 1 || aws.ToString(one.AvailabilityZones[0].ZoneId) != "use1-az3" {
		t.Errorf("filtered zones %+v", one.AvailabilityZones)
	}
	s.fails("InvalidParameterValue", "describe-availability-zones", "--zone-names", "us-west-2a")

	var regions ec2.DescribeRegionsOutput
	s.json(&regions, "describe-regions", "--all-regions")
	var got []string
	for _, r := range regions.Regions {
		got = append(got, aws.ToString(r.RegionName))
		if aws.ToString(r.Endpoint) != "ec2."+aws.ToString(r.RegionName)+".amazonaws.com" || aws.ToString(r.OptInStatus) != "opt-in-not-required" {
			t.Errorf("region %+v", r)
		}
	}
	var want []string
	for _, r := range f.world.Catalog().RegionsOf(catalog.AWS) {
		want = append(want, r.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("regions %v, want %v", got, want)
	}
	var named ec2.DescribeRegionsOutput
	s.json(&named, "describe-regions", "--region-names", "eu-west-1", "us-west-2")
	if len(named.Regions) != 2 {
		t.Errorf("named regions %+v", named.Regions)
	}
	s.fails("InvalidParameterValue", "describe-regions", "--region-names", "mars-north-1")
}

func cliOfferings(t *testing.T, f *fixture, s *session) {
	f.world.SetOffered(catalog.AWS, "us-east-1d", "p5.48xlarge", false)
	var byZone, byID, regional ec2.DescribeInstanceTypeOfferingsOutput
	s.json(&byZone, "describe-instance-type-offerings", "--location-type", "availability-zone", "--filters", "Name=instance-type,Values=p5.48xlarge", "--page-size", "5")
	s.json(&byID, "describe-instance-type-offerings", "--location-type", "availability-zone-id", "--filters", "Name=location,Values=use1-az1")
	s.json(&regional, "describe-instance-type-offerings", "--page-size", "5")
	var zones []string
	for _, o := range byZone.InstanceTypeOfferings {
		zones = append(zones, aws.ToString(o.Location))
	}
	p5Zones := slices.DeleteFunc(catalogZones(t, "us-east-1", "p5.48xlarge", catalog.OnDemand, catalog.Spot), func(z string) bool { return z == "us-east-1d" })
	if !slices.Equal(zones, p5Zones) {
		t.Errorf("p5.48xlarge offered in %v, want %v", zones, p5Zones)
	}
	var inAZ1 []string
	for _, o := range byID.InstanceTypeOfferings {
		if o.LocationType != types.LocationTypeAvailabilityZoneId {
			t.Errorf("offering %+v", o)
		}
		inAZ1 = append(inAZ1, string(o.InstanceType))
	}
	var want []string
	for _, typ := range f.world.Offered(catalog.AWS, "us-east-1a", catalog.OnDemand) {
		want = append(want, typ.Name)
	}
	for _, typ := range f.world.Offered(catalog.AWS, "us-east-1a", catalog.Spot) {
		if !slices.Contains(want, typ.Name) {
			want = append(want, typ.Name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(inAZ1, want) {
		t.Errorf("use1-az1 offers %v, want %v", inAZ1, want)
	}
	var offered []string
	for _, o := range regional.InstanceTypeOfferings {
		offered = append(offered, string(o.InstanceType))
	}
	if !slices.Equal(offered, regionTypes(f, "us-east-1")) {
		t.Errorf("the region offers %v, want %v", offered, regionTypes(f, "us-east-1"))
	}
}

// With launches that take two minutes, the CLI sees pending (code 0) and
// then, once the clock has moved, running (16), with status checks still
// initializing; the waiter returns at its first poll.
func cliPending(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g6.2xlarge")
	id := aws.ToString(run.Instances[0].InstanceId)
	state := func() types.InstanceState {
		var out ec2.DescribeInstancesOutput
		s.json(&out, "describe-instances", "--instance-ids", id)
		return *out.Reservations[0].Instances[0].State
	}
	status := func(all bool) []types.InstanceStatus {
		args := []string{"describe-instance-status", "--instance-ids", id}
		if all {
			args = append(args, "--include-all-instances")
		}
		var out ec2.DescribeInstanceStatusOutput
		s.json(&out, args...)
		return out.InstanceStatuses
	}
	if st := run.Instances[0].State; st.Name != types.InstanceStateNamePending || aws.ToInt32(st.Code) != 0 {
		t.Errorf("run-instances answered %s %d", st.Name, aws.ToInt32(st.Code))
	}
	if st := state(); st.Name != types.InstanceStateNamePending || aws.ToInt32(st.Code) != 0 {
		t.Errorf("describe-instances shows %s %d while pending", st.Name, aws.ToInt32(st.Code))
	}
	if got := status(false); len(got) != 0 {
		t.Errorf("describe-instance-status lists a pending instance without --include-all-instances: %+v", got)
	}
	if got := status(true); len(got) != 1 || got[0].InstanceStatus.Status != types.SummaryStatusInitializing || got[0].SystemStatus.Status != types.SummaryStatusInitializing {
		t.Errorf("status while pending %+v", got)
	}
	f.clock.Advance(2 * time.Minute)
	if st := state(); st.Name != types.InstanceStateNameRunning || aws.ToInt32(st.Code) != 16 {
		t.Errorf("describe-instances shows %s %d once launched", st.Name, aws.ToInt32(st.Code))
	}
	if got := status(false); len(got) != 1 || got[0].InstanceStatus.Status != types.SummaryStatusInitializing || got[0].SystemStatus.Status != types.SummaryStatusInitializing {
		t.Errorf("status just after it runs %+v", got)
	}
	s.json(nil, "wait", "instance-running", "--instance-ids", id)
}

// Terminating answers shutting-down (32) with the previous state; a
// repeat is fine; after the shutdown time it is terminated (48).
func cliTerminate(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge")
	id := aws.ToString(run.Instances[0].InstanceId)
	terminate := func() types.InstanceStateChange {
		var out ec2.TerminateInstancesOutput
		s.json(&out, "terminate-instances", "--instance-ids", id)
		if len(out.TerminatingInstances) != 1 {
			t.Fatalf("terminate-instances answered %+v", out.TerminatingInstances)
		}
		return out.TerminatingInstances[0]
	}
	first := terminate()
	if first.CurrentState.Name != types.InstanceStateNameShuttingDown || aws.ToInt32(first.CurrentState.Code) != 32 ||
		first.PreviousState.Name != types.InstanceStateNameRunning || aws.ToInt32(first.PreviousState.Code) != 16 {
		t.Errorf("terminate answered %+v -> %+v", first.PreviousState, first.CurrentState)
	}
	again := terminate()
	if again.CurrentState.Name != types.InstanceStateNameShuttingDown || again.PreviousState.Name != types.InstanceStateNameShuttingDown {
		t.Errorf("a repeat answered %+v -> %+v", again.PreviousState, again.CurrentState)
	}
	f.clock.Advance(time.Minute)
	var out ec2.DescribeInstancesOutput
	s.json(&out, "describe-instances", "--instance-ids", id)
	inst := out.Reservations[0].Instances[0]
	if inst.State.Name != types.InstanceStateNameTerminated || aws.ToInt32(inst.State.Code) != 48 ||
		inst.StateReason == nil || aws.ToString(inst.StateReason.Code) != "Client.UserInitiatedShutdown" {
		t.Errorf("after the shutdown: %+v, reason %+v", inst.State, inst.StateReason)
	}
	last := terminate()
	if last.CurrentState.Name != types.InstanceStateNameTerminated || last.PreviousState.Name != types.InstanceStateNameTerminated {
		t.Errorf("terminating a terminated instance answered %+v -> %+v", last.PreviousState, last.CurrentState)
	}
	s.json(nil, "wait", "instance-terminated", "--instance-ids", id)
	s.fails("InvalidInstanceID.NotFound", "terminate-instances", "--instance-ids", "i-0123456789abcdef0")
}

func cliCapacity(t *testing.T, f *fixture, s *session) {
	f.world.SetCapacity(catalog.AWS, "us-east-1c", "p5.48xlarge", catalog.OnDemand, 0)
	msg := s.fails("InsufficientInstanceCapacity", "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "p5.48xlarge",
		"--placement", "AvailabilityZone=us-east-1c")
	if !strings.Contains(msg, "(us-east-1c)") {
		t.Errorf("message %q does not name the zone", msg)
	}
	if n := len(f.world.List(catalog.AWS, nil)); n != 0 {
		t.Errorf("%d instances after a stock-out", n)
	}
}

// An empty bucket of non-mutating calls throttles the second describe;
// mutating calls have a bucket of their own.
func cliThrottle(t *testing.T, f *fixture, s *session) {
	if err := f.world.SetRateLimits(sim.RateLimit{Cloud: catalog.AWS, Class: sim.ClassNonMutating, Rate: 1, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	s.json(nil, "describe-instances")
	s.fails("RequestLimitExceeded", "describe-instances")
	s.json(nil, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge")
	f.clock.Advance(time.Second)
	s.json(nil, "describe-instances")
}

func cliUnknownNetwork(t *testing.T, f *fixture, s *session) {
	launch := []string{"run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge"}
	msg := s.fails("InvalidSubnetID.NotFound", append(launch, "--subnet-id", "subnet-0123456789abcdef0")...)
	if msg != "The subnet ID 'subnet-0123456789abcdef0' does not exist" {
		t.Errorf("message %q", msg)
	}
	msg = s.fails("InvalidGroup.NotFound", append(launch, "--security-group-ids", "sg-0123456789abcdef0")...)
	if !strings.HasPrefix(msg, "The security group 'sg-0123456789abcdef0' does not exist") {
		t.Errorf("message %q", msg)
	}
	s.fails("InvalidGroup.NotFound", append(launch, "--security-groups", "no-such-group")...)
	s.fails("InvalidSubnetID.NotFound", "describe-subnets", "--subnet-ids", "subnet-0123456789abcdef0")
	s.fails("InvalidGroup.NotFound", "describe-security-groups", "--group-ids", "sg-0123456789abcdef0")
	s.fails("InvalidVpcID.NotFound", "describe-vpcs", "--vpc-ids", "vpc-0123456789abcdef0")
	if n := len(f.world.List(catalog.AWS, nil)); n != 0 {
		t.Errorf("%d instances after refused launches", n)
	}
}

// A user makes a VPC, a subnet and a group with the CLI, opens a port,
// launches into them, and cleans up: the launch lands in the subnet's
// zone with an address of its range; what is in use cannot be deleted.
func cliOwnNetwork(t *testing.T, f *fixture, s *session) {
	var vpc ec2.CreateVpcOutput
	s.json(&vpc, "create-vpc", "--cidr-block", "10.1.0.0/16", "--tag-specifications", "ResourceType=vpc,Tags=[{Key=Name,Value=train}]")
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	// The subnet is in a zone that sells the launch's type, other than the
	// one a launch names against it below.
	zone := zoneSelling(t, f.world, "us-east-1", "g4dn.xlarge", catalog.OnDemand, "us-east-1a")
	east, _ := f.world.Region(catalog.AWS, "us-east-1")
	zoneID := east.ZoneIDs[slices.Index(east.Zones, zone)]
	var subnet ec2.CreateSubnetOutput
	s.json(&subnet, "create-subnet", "--vpc-id", vpcID, "--cidr-block", "10.1.2.0/24", "--availability-zone", zone)
	subnetID := aws.ToString(subnet.Subnet.SubnetId)
	if aws.ToInt32(subnet.Subnet.AvailableIpAddressCount) != 251 || aws.ToString(subnet.Subnet.AvailabilityZoneId) != zoneID {
		t.Errorf("subnet %+v", subnet.Subnet)
	}
	var group ec2.CreateSecurityGroupOutput
	s.json(&group, "create-security-group", "--group-name", "trainers", "--description", "training nodes", "--vpc-id", vpcID)
	groupID := aws.ToString(group.GroupId)
	s.json(nil, "authorize-security-group-ingress", "--group-id", groupID, "--protocol", "tcp", "--port", "22", "--cidr", "10.0.0.0/8")
	s.fails("InvalidPermission.Duplicate", "authorize-security-group-ingress", "--group-id", groupID, "--protocol", "tcp", "--port", "22", "--cidr", "10.0.0.0/8")

	var groups ec2.DescribeSecurityGroupsOutput
	s.json(&groups, "describe-security-groups", "--filters", "Name=vpc-id,Values="+vpcID)
	names := map[string]types.SecurityGroup{}
	for _, g := range groups.SecurityGroups {
		names[aws.ToString(g.GroupName)] = g
	}
	if len(names) != 2 || len(names["trainers"].IpPermissions) != 1 || aws.ToInt32(names["trainers"].IpPermissions[0].FromPort) != 22 ||
		names["default"].GroupId == nil {
		t.Errorf("the VPC's groups %+v", groups.SecurityGroups)
	}

	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--subnet-id", subnetID, "--security-group-ids", groupID)
	inst := run.Instances[0]
	if aws.ToString(inst.Placement.AvailabilityZone) != zone || aws.ToString(inst.SubnetId) != subnetID || aws.ToString(inst.VpcId) != vpcID ||
		!strings.HasPrefix(aws.ToString(inst.PrivateIpAddress), "10.1.2.") || len(inst.SecurityGroups) != 1 || aws.ToString(inst.SecurityGroups[0].GroupName) != "trainers" {
		t.Errorf("launched into %s %s %s at %s with %+v", aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.SubnetId), aws.ToString(inst.VpcId),
			aws.ToString(inst.PrivateIpAddress), inst.SecurityGroups)
	}
	var described ec2.DescribeInstancesOutput
	s.json(&described, "describe-instances", "--filters", "Name=vpc-id,Values="+vpcID)
	if got := described.Reservations[0].Instances[0]; aws.ToString(got.PublicIpAddress) != "" || len(got.NetworkInterfaces) != 1 ||
		aws.ToString(got.NetworkInterfaces[0].PrivateIpAddress) != aws.ToString(inst.PrivateIpAddress) {
		t.Errorf("in a subnet that maps no public addresses: public %q, interfaces %+v", aws.ToString(got.PublicIpAddress), got.NetworkInterfaces)
	}
	var subnets ec2.DescribeSubnetsOutput
	s.json(&subnets, "describe-subnets", "--subnet-ids", subnetID)
	if n := aws.ToInt32(subnets.Subnets[0].AvailableIpAddressCount); n != 250 {
		t.Errorf("%d addresses left, want 250", n)
	}

	// References that do not fit together fail as on EC2.
	s.fails("InvalidParameterValue", "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--subnet-id", subnetID,
		"--placement", "AvailabilityZone=us-east-1a")
	var defaults ec2.DescribeSecurityGroupsOutput
	s.json(&defaults, "describe-security-groups", "--group-names", "default")
	s.fails("InvalidParameter", "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--subnet-id", subnetID,
		"--security-group-ids", aws.ToString(defaults.SecurityGroups[0].GroupId))

	s.fails("DependencyViolation", "delete-subnet", "--subnet-id", subnetID)
	s.fails("DependencyViolation", "delete-security-group", "--group-id", groupID)
	s.fails("DependencyViolation", "delete-vpc", "--vpc-id", vpcID)
	s.json(nil, "terminate-instances", "--instance-ids", aws.ToString(inst.InstanceId))
	f.clock.Advance(time.Minute)
	s.json(nil, "delete-subnet", "--subnet-id", subnetID)
	s.json(nil, "delete-security-group", "--group-id", groupID)
	s.fails("CannotDelete", "delete-security-group", "--group-id", aws.ToString(names["default"].GroupId))
	s.json(nil, "delete-vpc", "--vpc-id", vpcID)
	var vpcs ec2.DescribeVpcsOutput
	s.json(&vpcs, "describe-vpcs")
	if len(vpcs.Vpcs) != 1 || !aws.ToBool(vpcs.Vpcs[0].IsDefault) || aws.ToString(vpcs.Vpcs[0].CidrBlock) != "172.31.0.0/16" {
		t.Errorf("VPCs left %+v, want the default one", vpcs.Vpcs)
	}
}

// A launch resizing the image's root device changes the root volume; one
// on another device adds a volume; both show in the instance's mappings,
// the root under the instance's root device name.
func cliBlockDevices(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g6.2xlarge",
		"--block-device-mappings", `[{"DeviceName":"/dev/xvda","Ebs":{"VolumeSize":120,"VolumeType":"gp3"}},{"DeviceName":"/dev/sdf","Ebs":{"VolumeSize":500}}]`)
	inst := run.Instances[0]
	if aws.ToString(inst.RootDeviceName) != "/dev/xvda" || inst.RootDeviceType != types.DeviceTypeEbs || len(inst.BlockDeviceMappings) != 2 ||
		aws.ToString(inst.BlockDeviceMappings[0].DeviceName) != "/dev/xvda" || !aws.ToBool(inst.BlockDeviceMappings[0].Ebs.DeleteOnTermination) ||
		aws.ToBool(inst.BlockDeviceMappings[1].Ebs.DeleteOnTermination) {
		t.Fatalf("root %s (%s), mappings %+v", aws.ToString(inst.RootDeviceName), inst.RootDeviceType, inst.BlockDeviceMappings)
	}
	var vols ec2.DescribeVolumesOutput
	s.json(&vols, "describe-volumes", "--filters", "Name=attachment.instance-id,Values="+aws.ToString(inst.InstanceId))
	sizes := map[string]int32{}
	for _, v := range vols.Volumes {
		sizes[aws.ToString(v.Attachments[0].Device)] = aws.ToInt32(v.Size)
	}
	if sizes["/dev/xvda"] != 120 || sizes["/dev/sdf"] != 500 {
		t.Errorf("volume sizes %v", sizes)
	}
	var described ec2.DescribeInstancesOutput
	s.json(&described, "describe-instances", "--instance-ids", aws.ToString(inst.InstanceId))
	got := described.Reservations[0].Instances[0]
	if aws.ToString(got.PublicIpAddress) == "" || !strings.HasSuffix(aws.ToString(got.PublicDnsName), ".compute-1.amazonaws.com") ||
		got.CpuOptions == nil || aws.ToInt32(got.CpuOptions.CoreCount) != 4 || aws.ToString(got.PlatformDetails) != "Linux/UNIX" {
		t.Errorf("in the default subnet: public %q %q, cpu %+v, platform %q", aws.ToString(got.PublicIpAddress), aws.ToString(got.PublicDnsName),
			got.CpuOptions, aws.ToString(got.PlatformDetails))
	}
}

// cliCreateTags: create-tags adds tags and replaces the values of keys the
// instance has, leaving the others, and describe-instances filters on
// them at once; an instance that does not exist is refused.
func cliCreateTags(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge",
		"--tag-specifications", "ResourceType=instance,Tags=[{Key=team,Value=ml},{Key=owner,Value=ana}]")
	id := aws.ToString(run.Instances[0].InstanceId)
	s.json(nil, "create-tags", "--resources", id, "--tags", "Key=gpufleet-fleet,Value=ml", "Key=owner,Value=ops")
	var out ec2.DescribeInstancesOutput
	s.json(&out, "describe-instances", "--filters", "Name=tag:gpufleet-fleet,Values=ml")
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("the filter on the new tag finds %+v", out.Reservations)
	}
	got := map[string]string{}
	for _, tag := range out.Reservations[0].Instances[0].Tags {
		got[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if want := map[string]string{"team": "ml", "owner": "ops", "gpufleet-fleet": "ml"}; !maps.Equal(got, want) {
		t.Errorf("tags %v, want %v", got, want)
	}
	s.fails("InvalidInstanceID.NotFound", "create-tags", "--resources", "i-0123456789abcdef0", "--tags", "Key=a,Value=b")

	var tags ec2.DescribeTagsOutput
	s.json(&tags, "describe-tags", "--filters", "Name=resource-id,Values="+id)
	var listed []string
	for _, d := range tags.Tags {
		if aws.ToString(d.ResourceId) != id || d.ResourceType != types.ResourceTypeInstance {
			t.Errorf("describe-tags for %s lists %+v", id, d)
		}
		listed = append(listed, aws.ToString(d.Key)+"="+aws.ToString(d.Value))
	}
	if want := []string{"gpufleet-fleet=ml", "owner=ops", "team=ml"}; !slices.Equal(listed, want) {
		t.Errorf("describe-tags lists %v, want %v", listed, want)
	}
	s.json(&tags, "describe-tags", "--filters", "Name=key,Values=team", "Name=resource-type,Values=instance")
	if len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Value) != "ml" {
		t.Errorf("describe-tags by key lists %+v", tags.Tags)
	}
	s.fails("InvalidParameterValue", "describe-tags", "--filters", "Name=colour,Values=red")
}

// Spot launches are spot requests that describe-spot-instance-requests
// lists: active and fulfilled while the instance runs, closed with the
// reason once it ends.
func cliSpotRequests(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--count", "2",
		"--instance-market-options", "MarketType=spot,SpotOptions={MaxPrice=0.9}")
	if len(run.Instances) != 2 {
		t.Fatalf("launched %d spot instances", len(run.Instances))
	}
	byInstance := map[string]string{}
	for _, inst := range run.Instances {
		byInstance[aws.ToString(inst.InstanceId)] = aws.ToString(inst.SpotInstanceRequestId)
	}
	var out ec2.DescribeSpotInstanceRequestsOutput
	s.json(&out, "describe-spot-instance-requests")
	if len(out.SpotInstanceRequests) != 2 {
		t.Fatalf("%d spot requests, want 2", len(out.SpotInstanceRequests))
	}
	for _, r := range out.SpotInstanceRequests {
		if byInstance[aws.ToString(r.InstanceId)] != aws.ToString(r.SpotInstanceRequestId) || r.State != types.SpotInstanceStateActive ||
			aws.ToString(r.Status.Code) != "fulfilled" || r.Type != types.SpotInstanceTypeOneTime || aws.ToString(r.SpotPrice) != "0.900000" {
			t.Errorf("spot request %+v (status %+v)", r, r.Status)
		}
	}
	first, second := aws.ToString(run.Instances[0].InstanceId), aws.ToString(run.Instances[1].InstanceId)
	s.json(nil, "terminate-instances", "--instance-ids", first)
	if err := f.world.Preempt(second); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{byInstance[first]: "instance-terminated-by-user", byInstance[second]: "instance-terminated-no-capacity"}
	s.json(&out, "describe-spot-instance-requests", "--spot-instance-request-ids", byInstance[first], byInstance[second])
	for _, r := range out.SpotInstanceRequests {
		if r.State != types.SpotInstanceStateClosed || aws.ToString(r.Status.Code) != want[aws.ToString(r.SpotInstanceRequestId)] {
			t.Errorf("after the end of %s: state %s, status %s; want closed, %s", aws.ToString(r.InstanceId), r.State, aws.ToString(r.Status.Code), want[aws.ToString(r.SpotInstanceRequestId)])
		}
	}
	s.json(&out, "describe-spot-instance-requests", "--filters", "Name=state,Values=active")
	if len(out.SpotInstanceRequests) != 0 {
		t.Errorf("%d active spot requests after both ended", len(out.SpotInstanceRequests))
	}
	s.fails("InvalidSpotInstanceRequestID.NotFound", "describe-spot-instance-requests", "--spot-instance-request-ids", "sir-0123abcd")
}

// --dry-run is answered as the call would be: the error it would meet, or
// DryRunOperation where it would succeed, and nothing changes. Capacity is
// not part of the check.
func cliDryRun(t *testing.T, f *fixture, s *session) {
	launch := []string{"run-instances", "--dry-run", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge"}
	s.fails("DryRunOperation", launch...)
	s.fails("InvalidAMIID.Malformed", "run-instances", "--dry-run", "--image-id", "ami-nope", "--instance-type", "g4dn.xlarge")
	s.fails("InvalidParameterValue", "run-instances", "--dry-run", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.huge")
	s.fails("InvalidSubnetID.NotFound", append(launch, "--subnet-id", "subnet-0123456789abcdef0")...)
	s.fails("InvalidInstanceID.NotFound", "terminate-instances", "--dry-run", "--instance-ids", "i-0123456789abcdef0")
	s.fails("InvalidInstanceID.NotFound", "describe-instances", "--dry-run", "--instance-ids", "i-0123456789abcdef0")
	s.fails("DryRunOperation", "describe-instances", "--dry-run")
	// A zone with no room still passes a dry run: it checks the call, not
	// whether the instances would fit.
	f.world.SetCapacity(catalog.AWS, "us-east-1a", "g4dn.xlarge", catalog.OnDemand, 0)
	s.fails("DryRunOperation", append(launch, "--placement", "AvailabilityZone=us-east-1a")...)
	if n := len(f.world.List(catalog.AWS, nil)); n != 0 {
		t.Fatalf("%d instances after dry runs", n)
	}

	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", "ami-0123456789abcdef0", "--instance-type", "g4dn.xlarge", "--placement", "AvailabilityZone=us-east-1b", "--tag-specifications", "ResourceType=instance,Tags=[{Key=team,Value=ml}]")
	id := aws.ToString(run.Instances[0].InstanceId)
	s.fails("DryRunOperation", "create-tags", "--dry-run", "--resources", id, "--tags", "Key=team,Value=other")
	s.fails("DryRunOperation", "terminate-instances", "--dry-run", "--instance-ids", id)
	inst, ok := f.world.Get(id)
	if !ok || inst.Tags["team"] != "ml" || inst.State == sim.StateShuttingDown || inst.State == sim.StateTerminated {
		t.Fatalf("after dry runs the instance is %+v (found %v); want it untouched", inst, ok)
	}
}
