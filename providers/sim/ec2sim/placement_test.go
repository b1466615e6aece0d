// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func createGroup(t *testing.T, c *ec2.Client, name string, strategy types.PlacementStrategy, kv ...string) types.PlacementGroup {
	t.Helper()
	in := &ec2.CreatePlacementGroupInput{GroupName: aws.String(name), Strategy: strategy}
	if len(kv) > 0 {
		spec := types.TagSpecification{ResourceType: types.ResourceTypePlacementGroup}
		for i := 0; i+1 < len(kv); i += 2 {
			spec.Tags = append(spec.Tags, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
		}
		in.TagSpecifications = []types.TagSpecification{spec}
	}
	out, err := c.CreatePlacementGroup(context.Background(), in)
	if err != nil {
		t.Fatalf("CreatePlacementGroup(%s): %v", name, err)
	}
	if out.PlacementGroup == nil {
		t.Fatalf("CreatePlacementGroup(%s) answered no group", name)
	}
	return *out.PlacementGroup
}

func groupNames(t *testing.T, c *ec2.Client, in *ec2.DescribePlacementGroupsInput) []string {
	t.Helper()
	out, err := c.DescribePlacementGroups(context.Background(), in)
	if err != nil {
		t.Fatalf("DescribePlacementGroups: %v", err)
	}
	var names []string
	for _, g := range out.PlacementGroups {
		names = append(names, aws.ToString(g.GroupName))
	}
	return names
}

func intoGroup(in *ec2.RunInstancesInput, group string) *ec2.RunInstancesInput {
	in.Placement.GroupName = aws.String(group)
	return in
}

// A group reads back as created, with its id, ARN and tags; names are per
// region, so a second of the name is a duplicate there and not elsewhere.
func TestCreatePlacementGroup(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	g := createGroup(t, c, "gang", types.PlacementStrategyCluster, "team", "ml")
	if !regexp.MustCompile(`^pg-[0-9a-f]{17}$`).MatchString(aws.ToString(g.GroupId)) {
		t.Errorf("group id %q", aws.ToString(g.GroupId))
	}
	if g.State != types.PlacementGroupStateAvailable || g.Strategy != types.PlacementStrategyCluster {
		t.Errorf("state %q, strategy %q", g.State, g.Strategy)
	}
	if v, _ := tagValue(g.Tags, "team"); v != "ml" {
		t.Errorf("tags %v", g.Tags)
	}
	if arn := aws.ToString(g.GroupArn); arn != "arn:aws:ec2:us-east-1:123456789012:placement-group/gang" {
		t.Errorf("ARN %s", arn)
	}

	_, err := c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("gang"), Strategy: types.PlacementStrategySpread})
	if msg := wantAPIError(t, err, "InvalidPlacementGroup.Duplicate", http.StatusBadRequest); !strings.Contains(msg, "'gang' already exists") {
		t.Errorf("message %q", msg)
	}
	createGroup(t, f.client("us-west-2", 1), "gang", types.PlacementStrategyCluster)

	for name, in := range map[string]*ec2.CreatePlacementGroupInput{
		"InvalidParameterValue": {GroupName: aws.String("odd"), Strategy: "clustered"},
		"MissingParameter":      {Strategy: types.PlacementStrategyCluster},
	} {
		_, err := c.CreatePlacementGroup(ctx, in)
		wantAPIError(t, err, name, http.StatusBadRequest)
	}
	_, err = c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("tagged"), Strategy: types.PlacementStrategyCluster,
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	if names := groupNames(t, c, &ec2.DescribePlacementGroupsInput{}); strings.Join(names, ",") != "gang" {
		t.Errorf("us-east-1 holds %v after refused creates", names)
	}
}

func TestDescribePlacementGroups(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	a := createGroup(t, c, "gf-a", types.PlacementStrategyCluster, "gpufleet-fleet", "f1", "gpufleet-workload", "w")
	createGroup(t, c, "gf-b", types.PlacementStrategyCluster, "gpufleet-fleet", "f2", "gpufleet-workload", "w")
	createGroup(t, c, "other", types.PlacementStrategySpread, "team", "ml")

	filter := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	for name, tc := range map[string]struct {
		in   *ec2.DescribePlacementGroupsInput
		want string
	}{
		"all":             {&ec2.DescribePlacementGroupsInput{}, "gf-a,gf-b,other"},
		"by name":         {&ec2.DescribePlacementGroupsInput{GroupNames: []string{"other", "gf-a"}}, "gf-a,other"},
		"by id":           {&ec2.DescribePlacementGroupsInput{GroupIds: []string{aws.ToString(a.GroupId)}}, "gf-a"},
		"tag-key":         {&ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("tag-key", "gpufleet-fleet")}}, "gf-a,gf-b"},
		"tag:K":           {&ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("tag:gpufleet-fleet", "f2")}}, "gf-b"},
		"strategy":        {&ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("strategy", "spread")}}, "other"},
		"group-name glob": {&ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("group-name", "gf-*")}}, "gf-a,gf-b"},
		"filters and":     {&ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("tag-key", "gpufleet-fleet"), filter("group-name", "gf-b", "other")}}, "gf-b"},
	} {
		if got := strings.Join(groupNames(t, c, tc.in), ","); got != tc.want {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}

	_, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"gf-a", "nope"}})
	if msg := wantAPIError(t, err, "InvalidPlacementGroup.Unknown", http.StatusBadRequest); !strings.Contains(msg, "'nope' is unknown") {
		t.Errorf("message %q", msg)
	}
	_, err = c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
	wantAPIError(t, err, "InvalidPlacementGroupId.Malformed", http.StatusBadRequest)
	_, err = c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: []types.Filter{filter("zone", "us-east-1a")}})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	// Groups are the region's own.
	if names := groupNames(t, f.client("us-west-2", 1), &ec2.DescribePlacementGroupsInput{}); len(names) != 0 {
		t.Errorf("us-west-2 lists %v", names)
	}
}

// Instances launched into a group name it in their placement, and hold the
// group until they have terminated.
func TestPlacementGroupHoldsItsInstances(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	g := createGroup(t, c, "gang", types.PlacementStrategyCluster)

	_, err := c.RunInstances(ctx, intoGroup(runInput("g4dn.xlarge", "us-east-1a", ""), "nope"))
	wantAPIError(t, err, "InvalidPlacementGroup.Unknown", http.StatusBadRequest)

	in := intoGroup(runInput("g4dn.xlarge", "us-east-1a", "tok-gang"), "gang")
	in.MaxCount = aws.Int32(3)
	run := mustRun(t, c, in)
	if len(run.Instances) != 3 {
		t.Fatalf("launched %d, want 3", len(run.Instances))
	}
	for _, inst := range run.Instances {
		if got := aws.ToString(inst.Placement.GroupName); got != "gang" {
			t.Errorf("RunInstances answers %s in group %q", aws.ToString(inst.InstanceId), got)
		}
	}
	for _, inst := range describe(t, c, &ec2.DescribeInstancesInput{}) {
		if aws.ToString(inst.Placement.GroupName) != "gang" || aws.ToString(inst.Placement.GroupId) != aws.ToString(g.GroupId) {
			t.Errorf("%s is described in group %q (%q)", aws.ToString(inst.InstanceId), aws.ToString(inst.Placement.GroupName), aws.ToString(inst.Placement.GroupId))
		}
	}
	mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", ""))
	inGroup := describe(t, c, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("placement-group-name"), Values: []string{"gang"}}}})
	if len(inGroup) != 3 {
		t.Errorf("the placement-group-name filter finds %d, want 3", len(inGroup))
	}

	_, err = c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("gang")})
	if msg := wantAPIError(t, err, "InvalidPlacementGroup.InUse", http.StatusBadRequest); !strings.Contains(msg, "is in use") {
		t.Errorf("message %q", msg)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids(run.Instances)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("gang")}); err != nil {
		t.Fatalf("deleting the emptied group: %v", err)
	}
	_, err = c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("gang")})
	wantAPIError(t, err, "InvalidPlacementGroup.Unknown", http.StatusBadRequest)
	_, err = c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"gang"}})
	wantAPIError(t, err, "InvalidPlacementGroup.Unknown", http.StatusBadRequest)
	// A replay of the launch's token still answers the reservation, now
	// terminated, though its group is gone.
	replay := mustRun(t, c, in)
	if replay.Instances[0].State.Name != types.InstanceStateNameTerminated {
		t.Errorf("the replay answers %s", replay.Instances[0].State.Name)
	}
}

// A cluster group's instances share one zone: a launch into another while
// any of them lives is refused as EC2 refuses it, and accepted once they
// have ended. A spread group spans zones.
func TestClusterGroupKeepsOneZone(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	createGroup(t, c, "gang", types.PlacementStrategyCluster)
	createGroup(t, c, "spread", types.PlacementStrategySpread)

	first := mustRun(t, c, intoGroup(runInput("g4dn.xlarge", "us-east-1a", ""), "gang"))
	mustRun(t, c, intoGroup(runInput("g4dn.xlarge", "us-east-1a", ""), "gang"))
	_, err := c.RunInstances(ctx, intoGroup(runInput("g4dn.xlarge", "us-east-1b", ""), "gang"))
	msg := wantAPIError(t, err, "InvalidPlacementGroup.InUse", http.StatusBadRequest)
	if want := "The placement group 'gang' is in use in another availability zone: us-east-1a"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if n := len(describe(t, c, &ec2.DescribeInstancesInput{})); n != 2 {
		t.Errorf("%d instances after the refused launch, want 2", n)
	}

	all := describe(t, c, &ec2.DescribeInstancesInput{})
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids(all)}); err != nil {
		t.Fatal(err)
	}
	moved := mustRun(t, c, intoGroup(runInput("g4dn.xlarge", "us-east-1b", ""), "gang"))
	if z := aws.ToString(moved.Instances[0].Placement.AvailabilityZone); z != "us-east-1b" {
		t.Errorf("launched in %s", z)
	}
	if aws.ToString(first.Instances[0].Placement.GroupName) != "gang" {
		t.Errorf("first launch in group %q", aws.ToString(first.Instances[0].Placement.GroupName))
	}

	mustRun(t, c, intoGroup(runInput("g4dn.xlarge", "us-east-1a", ""), "spread"))
	mustRun(t, c, intoGroup(runInput("g4dn.xlarge", "us-east-1b", ""), "spread"))
}

// EC2 takes at most 500 placement groups in a region; the next one is
// refused, and another region has its own 500.
func TestPlacementGroupsAreLimitedPerRegion(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	for i := range 500 {
		createGroup(t, c, fmt.Sprintf("g%03d", i), types.PlacementStrategyCluster)
	}
	_, err := c.CreatePlacementGroup(context.Background(), &ec2.CreatePlacementGroupInput{GroupName: aws.String("one-too-many"), Strategy: types.PlacementStrategyCluster})
	wantAPIError(t, err, "PlacementGroupLimitExceeded", http.StatusBadRequest)
	createGroup(t, f.client("us-west-2", 1), "elsewhere", types.PlacementStrategyCluster)
}
