// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"fmt"
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

// What EC2 refuses, or takes time over, that a lenient emulator would let
// pass: each case is something a real account answers differently from a
// front that takes whatever it is sent.
func TestAWSCLIAsStrictAsEC2(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI, a second or so a command")
	}
	clis := awsCLIs(t)
	cases := []cliCase{
		{name: "an instance profile must exist", run: cliInstanceProfile},
		{name: "resolve:ssm: launches the AMI the parameter holds", run: cliResolveSSM},
		{name: "status checks initialize after the instance runs", cfg: sim.Config{PendingFor: time.Minute}, run: cliStatusChecks},
		{name: "a rack spread group holds seven a zone", run: cliRackSpread},
		{name: "persistent spot does not terminate", run: cliPersistentSpot},
		{name: "stop-instances and start-instances", cfg: sim.Config{OperationTime: time.Minute}, run: cliStopStart},
		{name: "a denied action is UnauthorizedOperation", run: cliDenied},
		{name: "a type only some zones offer", run: cliZonalType},
		{name: "a new account's quotas", run: cliNewAccountQuotas},
	}
	runCLICases(t, clis, cases)
}

const cliAMI = "ami-0123456789abcdef1"

func cliInstanceProfile(t *testing.T, f *fixture, s *session) {
	launch := []string{"run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge"}
	byName := append(slices.Clone(launch), "--iam-instance-profile", "Name=gpu-node")
	byARN := append(slices.Clone(launch), "--iam-instance-profile", "Arn=arn:aws:iam::123456789012:instance-profile/nodes/gpu-node")
	// A new account has no profiles: neither form launches, and a dry run
	// says so too.
	s.fails("InvalidParameterValue", byName...)
	s.fails("InvalidParameterValue", byARN...)
	s.fails("InvalidParameterValue", append(byName, "--dry-run")...)
	if err := f.world.SetAccount(sim.Account{InstanceProfiles: []string{"gpu-node"}}); err != nil {
		t.Fatal(err)
	}
	s.fails("DryRunOperation", append(byName, "--dry-run")...)
	var run ec2.RunInstancesOutput
	s.json(&run, byName...)
	if arn := aws.ToString(run.Instances[0].IamInstanceProfile.Arn); arn != "arn:aws:iam::123456789012:instance-profile/gpu-node" {
		t.Errorf("the instance runs as %s", arn)
	}
	s.json(nil, byARN...)
	// Another account's profile of the same name is not this one's.
	s.fails("InvalidParameterValue", append(slices.Clone(launch), "--iam-instance-profile", "Arn=arn:aws:iam::210987654321:instance-profile/gpu-node")...)
	s.fails("InvalidParameterValue", append(slices.Clone(launch), "--iam-instance-profile", "Name=other-node")...)
}

func cliResolveSSM(t *testing.T, f *fixture, s *session) {
	const dlami = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
	launched := func(image string) types.Instance {
		var run ec2.RunInstancesOutput
		s.json(&run, "run-instances", "--image-id", image, "--instance-type", "g4dn.xlarge")
		var out ec2.DescribeInstancesOutput
		s.json(&out, "describe-instances", "--instance-ids", aws.ToString(run.Instances[0].InstanceId))
		return out.Reservations[0].Instances[0]
	}
	inst := launched("resolve:ssm:" + dlami)
	ami := aws.ToString(inst.ImageId)
	if !strings.HasPrefix(ami, "ami-") || len(ami) != len("ami-")+17 {
		t.Fatalf("an instance launched from the parameter runs image %q, want the AMI id it holds", ami)
	}
	// The parameter holds an Ubuntu image, rooted at /dev/sda1, which
	// describe-images knows as it knows any AMI.
	var images ec2.DescribeImagesOutput
	s.json(&images, "describe-images", "--image-ids", ami)
	if len(images.Images) != 1 || aws.ToString(images.Images[0].RootDeviceName) != "/dev/sda1" || aws.ToString(inst.RootDeviceName) != "/dev/sda1" {
		t.Errorf("image %s: %+v, instance root %s; want /dev/sda1", ami, images.Images, aws.ToString(inst.RootDeviceName))
	}
	// The same parameter, by a version and by its ARN, is the same image
	// in the region; another region's is another AMI.
	if again := aws.ToString(launched("resolve:ssm:" + dlami + ":42").ImageId); again != ami {
		t.Errorf("a version of the parameter resolves to %s, the parameter to %s", again, ami)
	}
	if byARN := aws.ToString(launched("resolve:ssm:arn:aws:ssm:us-east-1:123456789012:parameter" + dlami).ImageId); byARN != ami {
		t.Errorf("the parameter's ARN resolves to %s, its name to %s", byARN, ami)
	}
	west := s.inRegion("us-west-2")
	var run ec2.RunInstancesOutput
	west.json(&run, "run-instances", "--image-id", "resolve:ssm:"+dlami, "--instance-type", "g4dn.xlarge")
	if other := aws.ToString(run.Instances[0].ImageId); other == ami || !strings.HasPrefix(other, "ami-") {
		t.Errorf("us-west-2 resolves the parameter to %s, us-east-1 to %s", other, ami)
	}
	// Amazon Linux's parameter holds an image rooted at /dev/xvda.
	if root := aws.ToString(launched("resolve:ssm:/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64").RootDeviceName); root != "/dev/xvda" {
		t.Errorf("Amazon Linux's image is rooted at %s", root)
	}
	s.fails("InvalidParameterValue", "run-instances", "--image-id", "resolve:ssm:/gpufleet/images/node", "--instance-type", "g4dn.xlarge")
	if err := f.world.SetAccount(sim.Account{SSMParameters: map[string]string{"/gpufleet/images/node": "ami-0fedcba9876543210"}}); err != nil {
		t.Fatal(err)
	}
	if own := aws.ToString(launched("resolve:ssm:/gpufleet/images/node").ImageId); own != "ami-0fedcba9876543210" {
		t.Errorf("the account's parameter resolves to %s", own)
	}
}

// inRegion is the same CLI, signing for another region.
func (s *session) inRegion(region string) *session {
	c := *s
	c.env = append(slices.Clone(s.env), "AWS_DEFAULT_REGION="+region, "AWS_REGION="+region)
	c.driver = startDriver(s.t, s.cli, c.env)
	return &c
}

func cliStatusChecks(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", cliAMI, "--instance-type", "g6.2xlarge")
	id := aws.ToString(run.Instances[0].InstanceId)
	status := func() types.InstanceStatus {
		var out ec2.DescribeInstanceStatusOutput
		s.json(&out, "describe-instance-status", "--instance-ids", id)
		if len(out.InstanceStatuses) != 1 {
			t.Fatalf("describe-instance-status lists %d for a running instance", len(out.InstanceStatuses))
		}
		return out.InstanceStatuses[0]
	}
	f.clock.Advance(time.Minute)
	// Running, but the checks have only begun: a client that waits for
	// instance-status-ok before using the node must keep waiting.
	if st := status(); st.InstanceState.Name != types.InstanceStateNameRunning || st.InstanceStatus.Status != types.SummaryStatusInitializing || st.SystemStatus.Status != types.SummaryStatusInitializing {
		t.Errorf("just after it runs: state %s, instance %s, system %s; want running, initializing, initializing", st.InstanceState.Name, st.InstanceStatus.Status, st.SystemStatus.Status)
	}
	var filtered ec2.DescribeInstanceStatusOutput
	s.json(&filtered, "describe-instance-status", "--filters", "Name=instance-status.reachability,Values=initializing")
	if len(filtered.InstanceStatuses) != 1 {
		t.Errorf("the reachability filter finds %d initializing", len(filtered.InstanceStatuses))
	}
	f.clock.Advance(2 * time.Minute)
	if st := status(); st.InstanceStatus.Status != types.SummaryStatusInitializing {
		t.Errorf("two minutes after it runs the checks are %s, want still initializing", st.InstanceStatus.Status)
	}
	f.clock.Advance(time.Minute)
	if st := status(); st.InstanceStatus.Status != types.SummaryStatusOk || st.SystemStatus.Status != types.SummaryStatusOk {
		t.Errorf("three minutes after it runs: instance %s, system %s; want ok", st.InstanceStatus.Status, st.SystemStatus.Status)
	}
	s.json(nil, "wait", "instance-status-ok", "--instance-ids", id)
}

func cliRackSpread(t *testing.T, f *fixture, s *session) {
	s.json(nil, "create-placement-group", "--group-name", "spread", "--strategy", "spread")
	zones := catalogZones(t, "us-east-1", "g4dn.xlarge", catalog.OnDemand)
	launch := func(zone, count string) []string {
		return []string{"run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge", "--count", count,
			"--placement", "GroupName=spread,AvailabilityZone=" + zone}
	}
	s.json(nil, launch(zones[0], "5")...)
	s.fails("InsufficientInstanceCapacity", launch(zones[0], "3")...)
	// A count with a smaller minimum gets what fits.
	var run ec2.RunInstancesOutput
	s.json(&run, launch(zones[0], "1:4")...)
	if len(run.Instances) != 2 {
		t.Errorf("a launch of 1 to 4 into a zone with room for 2 launched %d", len(run.Instances))
	}
	s.fails("InsufficientInstanceCapacity", launch(zones[0], "1")...)
	// Another zone has seven places of its own.
	s.json(nil, launch(zones[1], "7")...)
	// A terminated member gives its place back.
	var members ec2.DescribeInstancesOutput
	s.json(&members, "describe-instances", "--filters", "Name=placement-group-name,Values=spread", "Name=availability-zone,Values="+zones[0])
	s.json(nil, "terminate-instances", "--instance-ids", aws.ToString(members.Reservations[0].Instances[0].InstanceId))
	f.clock.Advance(time.Minute)
	s.json(nil, launch(zones[0], "1")...)
}

func cliPersistentSpot(t *testing.T, f *fixture, s *session) {
	market := func(spotType, behaviour string) []string {
		opts := fmt.Sprintf(`{"MarketType":"spot","SpotOptions":{"SpotInstanceType":%q`, spotType)
		if behaviour != "" {
			opts += fmt.Sprintf(`,"InstanceInterruptionBehavior":%q`, behaviour)
		}
		return []string{"run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge", "--instance-market-options", opts + "}}"}
	}
	s.fails("InvalidParameterCombination", market("persistent", "terminate")...)
	// terminate is the default behaviour, so persistent alone is refused.
	s.fails("InvalidParameterCombination", market("persistent", "")...)
	s.fails("InvalidParameterCombination", append(market("persistent", "terminate"), "--dry-run")...)
	var run ec2.RunInstancesOutput
	s.json(&run, market("persistent", "stop")...)
	s.json(nil, market("one-time", "terminate")...)
	if n := len(f.world.List(catalog.AWS, nil)); n != 2 {
		t.Errorf("%d instances, want the two valid launches", n)
	}
}

func cliStopStart(t *testing.T, f *fixture, s *session) {
	var run ec2.RunInstancesOutput
	s.json(&run, "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge")
	id := aws.ToString(run.Instances[0].InstanceId)
	state := func() types.InstanceStateName {
		var out ec2.DescribeInstancesOutput
		s.json(&out, "describe-instances", "--instance-ids", id)
		return out.Reservations[0].Instances[0].State.Name
	}
	s.fails("DryRunOperation", "stop-instances", "--dry-run", "--instance-ids", id)
	var stop ec2.StopInstancesOutput
	s.json(&stop, "stop-instances", "--instance-ids", id)
	if ch := stop.StoppingInstances; len(ch) != 1 || ch[0].CurrentState.Name != types.InstanceStateNameStopping || ch[0].PreviousState.Name != types.InstanceStateNameRunning {
		t.Errorf("stop-instances answered %+v", ch)
	}
	if st := state(); st != types.InstanceStateNameStopping {
		t.Errorf("just after stop-instances the instance is %s", st)
	}
	// It must finish stopping before it starts again.
	s.fails("IncorrectInstanceState", "start-instances", "--instance-ids", id)
	f.clock.Advance(time.Minute)
	s.json(nil, "wait", "instance-stopped", "--instance-ids", id)
	// A stopped instance holds no capacity: another launch may take its
	// place, and then the start meets the stock-out a launch would.
	zone := aws.ToString(run.Instances[0].Placement.AvailabilityZone)
	f.world.SetCapacity(catalog.AWS, zone, "g4dn.xlarge", catalog.OnDemand, 1)
	var other ec2.RunInstancesOutput
	s.json(&other, "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge", "--placement", "AvailabilityZone="+zone)
	s.fails("InsufficientInstanceCapacity", "start-instances", "--instance-ids", id)
	s.json(nil, "terminate-instances", "--instance-ids", aws.ToString(other.Instances[0].InstanceId))
	var start ec2.StartInstancesOutput
	s.json(&start, "start-instances", "--instance-ids", id)
	if ch := start.StartingInstances; len(ch) != 1 || ch[0].CurrentState.Name != types.InstanceStateNamePending || ch[0].PreviousState.Name != types.InstanceStateNameStopped {
		t.Errorf("start-instances answered %+v", ch)
	}
	s.json(nil, "wait", "instance-running", "--instance-ids", id)
	// A one-time spot instance cannot be stopped, only terminated.
	var spot ec2.RunInstancesOutput
	s.json(&spot, "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge", "--instance-market-options", `{"MarketType":"spot"}`)
	s.fails("UnsupportedOperation", "stop-instances", "--instance-ids", aws.ToString(spot.Instances[0].InstanceId))
	s.fails("InvalidInstanceID.NotFound", "stop-instances", "--instance-ids", "i-0123456789abcdef0")
}

func cliDenied(t *testing.T, f *fixture, s *session) {
	launch := []string{"run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge"}
	var run ec2.RunInstancesOutput
	s.json(&run, launch...)
	if err := f.world.SetAccount(sim.Account{Denied: []string{"aws:RunInstances", "aws:TerminateInstances"}}); err != nil {
		t.Fatal(err)
	}
	// A dry run is how a tool asks whether it may: it answers the denial,
	// not DryRunOperation.
	s.fails("UnauthorizedOperation", append(launch, "--dry-run")...)
	msg := s.fails("UnauthorizedOperation", launch...)
	if !strings.Contains(msg, "ec2:RunInstances") {
		t.Errorf("the denial does not name the action: %s", msg)
	}
	s.fails("UnauthorizedOperation", "terminate-instances", "--instance-ids", aws.ToString(run.Instances[0].InstanceId))
	// What the role may still do, it does.
	s.json(nil, "describe-instances")
	if n := len(f.world.List(catalog.AWS, nil)); n != 1 {
		t.Errorf("%d instances after the denied calls, want the first alone", n)
	}
}

// The catalog sells some types in only some of a region's zones: EC2 lists
// them only there, and a launch elsewhere is Unsupported, naming where the
// type is offered.
func cliZonalType(t *testing.T, f *fixture, s *session) {
	const typ = "p5en.48xlarge"
	offered := catalogZones(t, "us-east-1", typ, catalog.OnDemand, catalog.Spot)
	r, _ := catalog.Default().Region(catalog.AWS, "us-east-1")
	var elsewhere string
	for _, z := range r.Zones {
		if !slices.Contains(offered, z) {
			elsewhere = z
			break
		}
	}
	if elsewhere == "" {
		t.Fatalf("the catalog sells %s in every zone of us-east-1", typ)
	}
	var offerings ec2.DescribeInstanceTypeOfferingsOutput
	s.json(&offerings, "describe-instance-type-offerings", "--location-type", "availability-zone", "--filters", "Name=instance-type,Values="+typ)
	var listed []string
	for _, o := range offerings.InstanceTypeOfferings {
		listed = append(listed, aws.ToString(o.Location))
	}
	slices.Sort(listed)
	if !slices.Equal(listed, offered) {
		t.Errorf("%s is listed in %v, the catalog sells it in %v", typ, listed, offered)
	}
	msg := s.fails("Unsupported", "run-instances", "--image-id", cliAMI, "--instance-type", typ, "--placement", "AvailabilityZone="+elsewhere)
	if !strings.Contains(msg, offered[0]) {
		t.Errorf("the refusal does not say where %s is offered (%v): %s", typ, offered, msg)
	}
	s.fails("DryRunOperation", "run-instances", "--dry-run", "--image-id", cliAMI, "--instance-type", typ, "--placement", "AvailabilityZone="+offered[0])
	// A dry run checks the zone offers the type, though not that it has
	// room.
	s.fails("Unsupported", "run-instances", "--dry-run", "--image-id", cliAMI, "--instance-type", typ, "--placement", "AvailabilityZone="+elsewhere)
}

// A new account's quotas, as `sim serve` starts with: Service Quotas says
// them, and a launch past them is refused with EC2's error.
func cliNewAccountQuotas(t *testing.T, f *fixture, s *session) {
	if err := f.world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount}); err != nil {
		t.Fatal(err)
	}
	quotas := *s
	quotas.service = "service-quotas"
	value := func(code string) float64 {
		var out struct{ Quota struct{ Value float64 } }
		quotas.json(&out, "get-service-quota", "--service-code", "ec2", "--quota-code", code)
		return out.Quota.Value
	}
	if g, p := value("L-DB2E81BA"), value("L-417A185B"); g != 8 || p != 0 {
		t.Errorf("a new account may run %v G and %v P vCPUs, want 8 and 0", g, p)
	}
	// Two 4-vCPU instances fill the G quota; a third is over it.
	s.json(nil, "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge", "--count", "2")
	s.fails("VcpuLimitExceeded", "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge")
	s.fails("VcpuLimitExceeded", "run-instances", "--image-id", cliAMI, "--instance-type", "p4d.24xlarge")
	// A raised quota, as an increase request grants it, has room.
	if err := f.world.SetQuotas(sim.QuotaSet{Base: sim.NewAccount, Quotas: []sim.QuotaLimit{{Cloud: catalog.AWS, Region: "us-east-1", Name: "L-DB2E81BA", Limit: 64}}}); err != nil {
		t.Fatal(err)
	}
	if g := value("L-DB2E81BA"); g != 64 {
		t.Errorf("the raised quota reads %v", g)
	}
	s.json(nil, "run-instances", "--image-id", cliAMI, "--instance-type", "g4dn.xlarge")
}
