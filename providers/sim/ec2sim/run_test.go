// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestRunInstances(t *testing.T) {
	tests := []struct {
		name          string
		region        string
		in            *ec2.RunInstancesInput
		wantZone      string
		wantCount     int
		wantLifecycle types.InstanceLifecycleType
		wantTags      map[string]string
		// ownNetwork launches into a subnet and group the test creates in
		// the wanted zone.
		ownNetwork bool
	}{
		{
			name:      "on-demand in a named zone, with tags",
			region:    "us-east-1",
			in:        withTags(runInput("p5.48xlarge", "us-east-1c", "tok-a"), "gpufleet/pool", "train", "team", "ml"),
			wantZone:  "us-east-1c",
			wantCount: 1,
			wantTags:  map[string]string{"gpufleet/pool": "train", "team": "ml"},
		},
		{
			name:      "no zone picks the region's first zone offering the type",
			region:    "us-west-2",
			in:        runInput("g4dn.xlarge", "", "tok-b"),
			wantZone:  "us-west-2a",
			wantCount: 1,
		},
		{
			name:          "spot, placed where the catalog has a spot price",
			region:        "eu-north-1",
			in:            spot(runInput("p5.48xlarge", "", "tok-c")),
			wantZone:      catalogZones(t, "eu-north-1", "p5.48xlarge", catalog.Spot)[0],
			wantCount:     1,
			wantLifecycle: types.InstanceLifecycleTypeSpot,
		},
		{
			name:   "several instances in one reservation",
			region: "us-east-1",
			in: func() *ec2.RunInstancesInput {
				in := runInput("g6.2xlarge", "us-east-1b", "tok-d")
				in.MinCount, in.MaxCount = aws.Int32(3), aws.Int32(3)
				return in
			}(),
			wantZone:  "us-east-1b",
			wantCount: 3,
		},
		{
			name:   "resolve:ssm image, subnet, groups and volume are accepted",
			region: "us-east-1",
			in: func() *ec2.RunInstancesInput {
				in := runInput("g4dn.xlarge", "us-east-1a", "tok-e")
				in.ImageId = aws.String("resolve:ssm:/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id")
				in.BlockDeviceMappings = []types.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), Ebs: &types.EbsBlockDevice{VolumeSize: aws.Int32(500)}}}
				return in
			}(),
			wantZone:   "us-east-1a",
			wantCount:  1,
			ownNetwork: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			c := f.client(tt.region, 1)
			if tt.ownNetwork {
				net := newNetwork(t, c, tt.wantZone)
				tt.in.SubnetId, tt.in.SecurityGroupIds = aws.String(net.subnet), []string{net.group}
			}
			out := mustRun(t, c, tt.in)
			if !strings.HasPrefix(aws.ToString(out.ReservationId), "r-") || aws.ToString(out.OwnerId) != "123456789012" {
				t.Errorf("reservation %q owner %q", aws.ToString(out.ReservationId), aws.ToString(out.OwnerId))
			}
			if len(out.Instances) != tt.wantCount {
				t.Fatalf("got %d instances, want %d", len(out.Instances), tt.wantCount)
			}
			for i, inst := range out.Instances {
				if inst.State == nil || inst.State.Name != types.InstanceStateNamePending || aws.ToInt32(inst.State.Code) != 0 {
					t.Errorf("instance %d state %+v, want pending 0", i, inst.State)
				}
				if got := aws.ToString(inst.Placement.AvailabilityZone); got != tt.wantZone {
					t.Errorf("zone %s, want %s", got, tt.wantZone)
				}
				// An image named by an SSM parameter runs as the AMI it
				// holds.
				wantImage := aws.ToString(tt.in.ImageId)
				if strings.HasPrefix(wantImage, "resolve:ssm:") {
					wantImage = "ami-"
				}
				if inst.InstanceType != tt.in.InstanceType || !strings.HasPrefix(aws.ToString(inst.ImageId), wantImage) {
					t.Errorf("type %s image %s", inst.InstanceType, aws.ToString(inst.ImageId))
				}
				if aws.ToString(inst.ClientToken) != aws.ToString(tt.in.ClientToken) {
					t.Errorf("client token %q, want %q", aws.ToString(inst.ClientToken), aws.ToString(tt.in.ClientToken))
				}
				if inst.InstanceLifecycle != tt.wantLifecycle {
					t.Errorf("lifecycle %q, want %q", inst.InstanceLifecycle, tt.wantLifecycle)
				}
				if inst.LaunchTime == nil || !inst.LaunchTime.Equal(start) {
					t.Errorf("launch time %v, want %v", inst.LaunchTime, start)
				}
				if aws.ToString(inst.PrivateIpAddress) == "" || !strings.HasPrefix(aws.ToString(inst.SubnetId), "subnet-") {
					t.Errorf("network: ip %q subnet %q", aws.ToString(inst.PrivateIpAddress), aws.ToString(inst.SubnetId))
				}
				if aws.ToInt32(inst.AmiLaunchIndex) != int32(i) {
					t.Errorf("launch index %d, want %d", aws.ToInt32(inst.AmiLaunchIndex), i)
				}
				for k, v := range tt.wantTags {
					if got, ok := tagValue(inst.Tags, k); !ok || got != v {
						t.Errorf("tag %s = %q, want %q", k, got, v)
					}
				}
				if len(inst.Tags) != len(tt.wantTags) {
					t.Errorf("got %d tags, want %d", len(inst.Tags), len(tt.wantTags))
				}
			}
			// Launched means listed, and running once the world says so.
			listed := describe(t, c, &ec2.DescribeInstancesInput{})
			if len(listed) != tt.wantCount {
				t.Fatalf("DescribeInstances lists %d, want %d", len(listed), tt.wantCount)
			}
			if listed[0].State.Name != types.InstanceStateNameRunning || aws.ToInt32(listed[0].State.Code) != 16 {
				t.Errorf("listed state %+v, want running 16", listed[0].State)
			}
		})
	}
}

func TestRunInstancesIdempotency(t *testing.T) {
	f := newFixture(t, sim.Config{})
	east, west := f.client("us-east-1", 1), f.client("us-west-2", 1)
	ctx := context.Background()

	three := func(token, zone string) *ec2.RunInstancesInput {
		in := withTags(runInput("g4dn.xlarge", zone, token), "team", "ml")
		in.MinCount, in.MaxCount = aws.Int32(3), aws.Int32(3)
		return in
	}
	first := mustRun(t, east, three("replay-1", "us-east-1a"))

	t.Run("the same request returns the same reservation", func(t *testing.T) {
		again := mustRun(t, east, three("replay-1", "us-east-1a"))
		if aws.ToString(again.ReservationId) != aws.ToString(first.ReservationId) {
			t.Errorf("reservation %s, want %s", aws.ToString(again.ReservationId), aws.ToString(first.ReservationId))
		}
		if got, want := strings.Join(ids(again.Instances), ","), strings.Join(ids(first.Instances), ","); got != want {
			t.Errorf("instances %s, want %s", got, want)
		}
		if got := len(f.world.List(catalog.AWS, nil)); got != 3 {
			t.Errorf("world holds %d instances, want 3", got)
		}
	})
	t.Run("another zone of the region is exempt from the check", func(t *testing.T) {
		again := mustRun(t, east, three("replay-1", "us-east-1b"))
		if aws.ToString(again.ReservationId) != aws.ToString(first.ReservationId) {
			t.Errorf("reservation %s, want %s", aws.ToString(again.ReservationId), aws.ToString(first.ReservationId))
		}
	})
	t.Run("a terminated reservation is still returned", func(t *testing.T) {
		if _, err := east.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids(first.Instances)}); err != nil {
			t.Fatal(err)
		}
		again := mustRun(t, east, three("replay-1", "us-east-1a"))
		if aws.ToString(again.ReservationId) != aws.ToString(first.ReservationId) {
			t.Fatalf("reservation %s, want %s", aws.ToString(again.ReservationId), aws.ToString(first.ReservationId))
		}
		if again.Instances[0].State.Name != types.InstanceStateNameTerminated {
			t.Errorf("state %s, want terminated", again.Instances[0].State.Name)
		}
	})
	mismatches := []struct {
		name   string
		change func(in *ec2.RunInstancesInput)
	}{
		{"another type", func(in *ec2.RunInstancesInput) { in.InstanceType = "g6.2xlarge" }},
		{"another count", func(in *ec2.RunInstancesInput) { in.MaxCount = aws.Int32(4) }},
		{"another tag", func(in *ec2.RunInstancesInput) { in.TagSpecifications[0].Tags[0].Value = aws.String("web") }},
		{"another image", func(in *ec2.RunInstancesInput) { in.ImageId = aws.String("ami-0000000000000000f") }},
	}
	for _, tt := range mismatches {
		t.Run("mismatch: "+tt.name, func(t *testing.T) {
			in := three("replay-1", "us-east-1a")
			tt.change(in)
			_, err := east.RunInstances(ctx, in)
			msg := wantAPIError(t, err, "IdempotentParameterMismatch", 400)
			if msg != "Arguments on this idempotent request are inconsistent with arguments used in previous request(s)." {
				t.Errorf("message %q", msg)
			}
		})
	}
	t.Run("the same token in another region launches separately", func(t *testing.T) {
		other := mustRun(t, west, three("replay-1", "us-west-2a"))
		if aws.ToString(other.ReservationId) == aws.ToString(first.ReservationId) {
			t.Fatal("another region returned the first region's reservation")
		}
		if got := len(describe(t, west, &ec2.DescribeInstancesInput{})); got != 3 {
			t.Errorf("us-west-2 lists %d instances, want 3", got)
		}
	})
	t.Run("a single launch replays too", func(t *testing.T) {
		a := mustRun(t, east, runInput("p5.48xlarge", "us-east-1d", "single"))
		b := mustRun(t, east, runInput("p5.48xlarge", "us-east-1d", "single"))
		if aws.ToString(a.Instances[0].InstanceId) != aws.ToString(b.Instances[0].InstanceId) {
			t.Errorf("second launch made %s, want %s", aws.ToString(b.Instances[0].InstanceId), aws.ToString(a.Instances[0].InstanceId))
		}
	})
}

func TestRunInstancesCounts(t *testing.T) {
	tests := []struct {
		name          string
		min, max      int32
		capacity      int
		wantLaunched  int
		wantErrorCode string
	}{
		{name: "all fit", min: 2, max: 2, capacity: 3, wantLaunched: 2},
		{name: "as many as fit above MinCount", min: 2, max: 5, capacity: 3, wantLaunched: 3},
		{name: "fewer than MinCount launches none", min: 4, max: 5, capacity: 3, wantErrorCode: "InsufficientInstanceCapacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			f.world.SetCapacity(catalog.AWS, "us-east-1a", "g6e.2xlarge", catalog.OnDemand, tt.capacity)
			c := f.client("us-east-1", 1)
			in := runInput("g6e.2xlarge", "us-east-1a", "count-"+tt.name)
			in.MinCount, in.MaxCount = aws.Int32(tt.min), aws.Int32(tt.max)
			out, err := c.RunInstances(context.Background(), in)
			if tt.wantErrorCode != "" {
				wantAPIError(t, err, tt.wantErrorCode, 500)
			} else if err != nil {
				t.Fatal(err)
			} else if len(out.Instances) != tt.wantLaunched {
				t.Errorf("launched %d, want %d", len(out.Instances), tt.wantLaunched)
			}
			if got := len(f.world.List(catalog.AWS, nil)); got != tt.wantLaunched {
				t.Errorf("world holds %d instances, want %d", got, tt.wantLaunched)
			}
		})
	}
}

// EC2 shows a launch's state reason as "pending" until it runs, and names
// the default security group it lands in (the AWS CLI's run-instances
// output: "StateReason": {"Code": "pending", "Message": "pending"},
// "SecurityGroups": [{"GroupName": "default", ...}]). Found against moto,
// which answers an empty reason and no group.
func TestRunInstancesPendingReasonAndDefaultGroup(t *testing.T) {
	f := newFixture(t, sim.Config{PendingFor: time.Minute})
	c := f.client("us-east-1", 1)
	launched := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "reason")).Instances[0]
	id := aws.ToString(launched.InstanceId)
	described := describeOne(t, c, id)
	for name, inst := range map[string]types.Instance{"RunInstances": launched, "DescribeInstances": described} {
		if r := inst.StateReason; r == nil || aws.ToString(r.Code) != "pending" || aws.ToString(r.Message) != "pending" {
			t.Errorf("%s: state reason %+v, want pending/pending", name, r)
		}
		if len(inst.SecurityGroups) != 1 || aws.ToString(inst.SecurityGroups[0].GroupName) != "default" ||
			!strings.HasPrefix(aws.ToString(inst.SecurityGroups[0].GroupId), "sg-") {
			t.Errorf("%s: security groups %+v, want the default group by id and name", name, inst.SecurityGroups)
		}
	}
	pending := describe(t, c, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("state-reason-code"), Values: []string{"pending"}}}})
	if len(pending) != 1 {
		t.Errorf("state-reason-code=pending lists %d instances, want 1", len(pending))
	}

	f.clock.Advance(time.Minute)
	if r := describeOne(t, c, id).StateReason; r != nil {
		t.Errorf("a running instance has state reason %+v, want none", r)
	}
}
