// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestDescribeInstancesPaging(t *testing.T) {
	const total = 1001
	f := newFixture(t, sim.Config{Capacity: 2000})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	for _, n := range []int32{1000, 1} {
		in := runInput("g4dn.xlarge", "us-east-1a", fmt.Sprintf("bulk-%d", n))
		in.MinCount, in.MaxCount = aws.Int32(n), aws.Int32(n)
		mustRun(t, c, in)
	}

	tests := []struct {
		name string
		// launchAfterFirstPage launches this many more instances while the
		// listing is under way.
		launchAfterFirstPage int
		pageSize             int32
		wantCount, wantPages int
	}{
		{name: "pages of 50", pageSize: 50, wantCount: total, wantPages: 21},
		{name: "pages of 1000", pageSize: 1000, wantCount: total, wantPages: 2},
		{name: "launches while paging neither repeat nor skip", launchAfterFirstPage: 7, pageSize: 100, wantCount: total + 7, wantPages: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			pages := 0
			p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(tt.pageSize)})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				n := 0
				for _, r := range page.Reservations {
					for _, inst := range r.Instances {
						id := aws.ToString(inst.InstanceId)
						if seen[id] {
							t.Fatalf("page %d repeats %s", pages, id)
						}
						seen[id] = true
						n++
					}
				}
				if n > int(tt.pageSize) {
					t.Fatalf("page %d holds %d instances, more than %d", pages, n, tt.pageSize)
				}
				if pages == 1 && tt.launchAfterFirstPage > 0 {
					in := runInput("g4dn.xlarge", "us-east-1b", "during-paging")
					in.MinCount, in.MaxCount = aws.Int32(int32(tt.launchAfterFirstPage)), aws.Int32(int32(tt.launchAfterFirstPage))
					mustRun(t, c, in)
				}
			}
			if len(seen) != tt.wantCount || pages != tt.wantPages {
				t.Errorf("listed %d instances in %d pages, want %d in %d", len(seen), pages, tt.wantCount, tt.wantPages)
			}
		})
	}
}

func TestDescribeInstancesFilters(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	launch := func(in *ec2.RunInstancesInput) string { return aws.ToString(mustRun(t, c, in).Instances[0].InstanceId) }
	ml := launch(withTags(runInput("p5.48xlarge", "us-east-1a", "f-ml"), "team", "ml", "gpufleet/pool", "train"))
	mlops := launch(withTags(runInput("g4dn.xlarge", "us-east-1b", "f-mlops"), "team", "mlops"))
	untagged := launch(runInput("g4dn.xlarge", "us-east-1a", "f-untagged"))
	spotZone := zoneSelling(t, f.world, "us-east-1", "g4dn.xlarge", catalog.Spot, "us-east-1a", "us-east-1b")
	spotID := launch(spot(withTags(runInput("g4dn.xlarge", spotZone, "f-spot"), "team", "web")))
	gone := launch(runInput("g6.2xlarge", "us-east-1a", "f-gone"))
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{gone}}); err != nil {
		t.Fatal(err)
	}
	// Another region's instance must never show.
	mustRun(t, f.client("us-west-2", 1), withTags(runInput("g4dn.xlarge", "us-west-2a", "f-west"), "team", "ml"))

	filter := func(name string, values ...string) types.Filter {
		return types.Filter{Name: aws.String(name), Values: values}
	}
	tests := []struct {
		name    string
		filters []types.Filter
		ids     []string
		want    []string
	}{
		{name: "no filter lists the region", want: []string{ml, mlops, untagged, spotID, gone}},
		{name: "tag value", filters: []types.Filter{filter("tag:team", "ml")}, want: []string{ml}},
		{name: "tag value wildcard", filters: []types.Filter{filter("tag:team", "ml*")}, want: []string{ml, mlops}},
		{name: "any of several values", filters: []types.Filter{filter("tag:team", "ml", "web")}, want: []string{ml, spotID}},
		{name: "tag key", filters: []types.Filter{filter("tag-key", "gpufleet/pool")}, want: []string{ml}},
		{name: "tag key of any value", filters: []types.Filter{filter("tag-key", "team")}, want: []string{ml, mlops, spotID}},
		{name: "state running", filters: []types.Filter{filter("instance-state-name", "running")}, want: []string{ml, mlops, untagged, spotID}},
		{name: "state terminated", filters: []types.Filter{filter("instance-state-name", "terminated")}, want: []string{gone}},
		{name: "spot lifecycle", filters: []types.Filter{filter("instance-lifecycle", "spot")}, want: []string{spotID}},
		{name: "client token", filters: []types.Filter{filter("client-token", "f-mlops")}, want: []string{mlops}},
		{name: "zone", filters: []types.Filter{filter("availability-zone", "us-east-1a")}, want: []string{ml, untagged, gone}},
		{name: "instance type", filters: []types.Filter{filter("instance-type", "g4dn.xlarge")}, want: []string{mlops, untagged, spotID}},
		{name: "filters combine", filters: []types.Filter{filter("instance-type", "g4dn.xlarge"), filter("availability-zone", "us-east-1a")}, want: []string{untagged}},
		{name: "user shutdown reason", filters: []types.Filter{filter("state-reason-code", "Client.UserInitiatedShutdown")}, want: []string{gone}},
		{name: "ids and filters combine", ids: []string{ml, mlops}, filters: []types.Filter{filter("tag:team", "mlops")}, want: []string{mlops}},
		{name: "no match", filters: []types.Filter{filter("tag:team", "nobody")}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(describe(t, c, &ec2.DescribeInstancesInput{Filters: tt.filters, InstanceIds: tt.ids}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeInstancesErrors(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	west := aws.ToString(mustRun(t, f.client("us-west-2", 1), runInput("g4dn.xlarge", "us-west-2a", "")).Instances[0].InstanceId)
	tests := []struct {
		name        string
		in          *ec2.DescribeInstancesInput
		wantCode    string
		wantMessage string
	}{
		{
			name:        "unknown id",
			in:          &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}},
			wantCode:    "InvalidInstanceID.NotFound",
			wantMessage: "The instance ID 'i-0123456789abcdef0' does not exist",
		},
		{
			name:        "several unknown ids",
			in:          &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0", "i-0123456789abcdef1"}},
			wantCode:    "InvalidInstanceID.NotFound",
			wantMessage: "The instance IDs 'i-0123456789abcdef0, i-0123456789abcdef1' do not exist",
		},
		{
			name:        "another region's instance",
			in:          &ec2.DescribeInstancesInput{InstanceIds: []string{west}},
			wantCode:    "InvalidInstanceID.NotFound",
			wantMessage: fmt.Sprintf("The instance ID '%s' does not exist", west),
		},
		{
			name:        "malformed id",
			in:          &ec2.DescribeInstancesInput{InstanceIds: []string{"i-xyz"}},
			wantCode:    "InvalidInstanceID.Malformed",
			wantMessage: `Invalid id: "i-xyz"`,
		},
		{
			name:        "unknown filter",
			in:          &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("colour"), Values: []string{"red"}}}},
			wantCode:    "InvalidParameterValue",
			wantMessage: "The filter 'colour' is invalid",
		},
		{
			name:     "MaxResults with ids",
			in:       &ec2.DescribeInstancesInput{InstanceIds: []string{west}, MaxResults: aws.Int32(5)},
			wantCode: "InvalidParameterCombination",
		},
		{
			name:     "MaxResults below 5",
			in:       &ec2.DescribeInstancesInput{MaxResults: aws.Int32(4)},
			wantCode: "InvalidParameterValue",
		},
		{
			name:     "MaxResults above 1000",
			in:       &ec2.DescribeInstancesInput{MaxResults: aws.Int32(1001)},
			wantCode: "InvalidParameterValue",
		},
		{
			name:     "forged NextToken",
			in:       &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5), NextToken: aws.String("not-a-token")},
			wantCode: "InvalidPaginationToken",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.DescribeInstances(ctx, tt.in)
			msg := wantAPIError(t, err, tt.wantCode, 400)
			if tt.wantMessage != "" && msg != tt.wantMessage {
				t.Errorf("message %q, want %q", msg, tt.wantMessage)
			}
		})
	}
}

func TestTerminateInstances(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	out := mustRun(t, c, runInput("p5.48xlarge", "us-east-1a", "term"))
	id := aws.ToString(out.Instances[0].InstanceId)

	steps := []struct {
		name                  string
		ids                   []string
		wantCurrent, wantPrev types.InstanceStateName
		wantCode              string
	}{
		{name: "running to shutting-down", ids: []string{id}, wantCurrent: types.InstanceStateNameShuttingDown, wantPrev: types.InstanceStateNameRunning},
		{name: "again is idempotent", ids: []string{id}, wantCurrent: types.InstanceStateNameTerminated, wantPrev: types.InstanceStateNameTerminated},
		{name: "unknown id", ids: []string{"i-00000000000000001"}, wantCode: "InvalidInstanceID.NotFound"},
		{name: "one unknown id terminates none", ids: []string{id, "i-00000000000000001"}, wantCode: "InvalidInstanceID.NotFound"},
		{name: "malformed id", ids: []string{"instance-1"}, wantCode: "InvalidInstanceID.Malformed"},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: tt.ids})
			if tt.wantCode != "" {
				wantAPIError(t, err, tt.wantCode, 400)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.TerminatingInstances) != 1 {
				t.Fatalf("got %d state changes, want 1", len(res.TerminatingInstances))
			}
			change := res.TerminatingInstances[0]
			if aws.ToString(change.InstanceId) != id || change.CurrentState.Name != tt.wantCurrent || change.PreviousState.Name != tt.wantPrev {
				t.Errorf("got %s %s <- %s, want %s <- %s", aws.ToString(change.InstanceId), change.CurrentState.Name, change.PreviousState.Name, tt.wantCurrent, tt.wantPrev)
			}
		})
	}

	t.Run("listed as terminated with the user's reason", func(t *testing.T) {
		inst := describeOne(t, c, id)
		if inst.State.Name != types.InstanceStateNameTerminated || aws.ToInt32(inst.State.Code) != 48 {
			t.Errorf("state %+v, want terminated 48", inst.State)
		}
		if inst.StateReason == nil || aws.ToString(inst.StateReason.Code) != "Client.UserInitiatedShutdown" {
			t.Errorf("state reason %+v", inst.StateReason)
		}
	})
	t.Run("gone after an hour", func(t *testing.T) {
		f.clock.Advance(59 * time.Minute)
		if got := len(describe(t, c, &ec2.DescribeInstancesInput{})); got != 1 {
			t.Fatalf("after 59 minutes %d instances listed, want 1", got)
		}
		f.clock.Advance(2 * time.Minute)
		if got := len(describe(t, c, &ec2.DescribeInstancesInput{})); got != 0 {
			t.Errorf("after 61 minutes %d instances listed, want 0", got)
		}
		_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		wantAPIError(t, err, "InvalidInstanceID.NotFound", 400)
	})
}

func TestCreateTags(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	id := aws.ToString(mustRun(t, c, withTags(runInput("g4dn.xlarge", "us-east-1a", "tags"), "team", "ml")).Instances[0].InstanceId)
	tag := func(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

	tests := []struct {
		name     string
		ids      []string
		tags     []types.Tag
		wantCode string
		want     map[string]string
	}{
		{name: "adds and replaces", ids: []string{id}, tags: []types.Tag{tag("team", "infra"), tag("gpufleet/node", "n1")}, want: map[string]string{"team": "infra", "gpufleet/node": "n1"}},
		{name: "unknown instance", ids: []string{"i-0123456789abcdef0"}, tags: []types.Tag{tag("a", "b")}, wantCode: "InvalidInstanceID.NotFound"},
		{name: "reserved prefix", ids: []string{id}, tags: []types.Tag{tag("aws:owner", "me")}, wantCode: "InvalidParameterValue"},
		{name: "empty key", ids: []string{id}, tags: []types.Tag{tag("", "x")}, wantCode: "InvalidParameterValue"},
		{name: "not an instance", ids: []string{"vpc-123"}, tags: []types.Tag{tag("a", "b")}, wantCode: "InvalidID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: tt.ids, Tags: tt.tags})
			if tt.wantCode != "" {
				wantAPIError(t, err, tt.wantCode, 400)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			inst := describeOne(t, c, id)
			for k, v := range tt.want {
				if got, _ := tagValue(inst.Tags, k); got != v {
					t.Errorf("tag %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// With latency, an instance is pending until it has launched and shutting
// down until it has stopped, and every call in between says so with
// EC2's state codes.
func TestLifecycleWithLatency(t *testing.T) {
	f := newFixture(t, sim.Config{PendingFor: 2 * time.Minute, OperationTime: time.Minute})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	launched := mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "lifecycle")).Instances[0]
	id := aws.ToString(launched.InstanceId)
	terminate := func() types.InstanceStateChange {
		out, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return out.TerminatingInstances[0]
	}
	state := func() *types.InstanceState { return describeOne(t, c, id).State }
	steps := []struct {
		name      string
		advance   time.Duration
		act       func() (current, previous *types.InstanceState)
		wantState types.InstanceStateName
		wantCode  int32
		wantPrev  types.InstanceStateName
	}{
		{name: "launched", act: func() (*types.InstanceState, *types.InstanceState) { return launched.State, nil }, wantState: types.InstanceStateNamePending, wantCode: 0},
		{name: "still pending", advance: time.Minute, act: func() (*types.InstanceState, *types.InstanceState) { return state(), nil }, wantState: types.InstanceStateNamePending, wantCode: 0},
		{name: "running", advance: time.Minute, act: func() (*types.InstanceState, *types.InstanceState) { return state(), nil }, wantState: types.InstanceStateNameRunning, wantCode: 16},
		{name: "terminating", act: func() (*types.InstanceState, *types.InstanceState) {
			c := terminate()
			return c.CurrentState, c.PreviousState
		},
			wantState: types.InstanceStateNameShuttingDown, wantCode: 32, wantPrev: types.InstanceStateNameRunning},
		{name: "still shutting down", advance: 30 * time.Second, act: func() (*types.InstanceState, *types.InstanceState) { return state(), nil },
			wantState: types.InstanceStateNameShuttingDown, wantCode: 32},
		{name: "terminating again", act: func() (*types.InstanceState, *types.InstanceState) {
			c := terminate()
			return c.CurrentState, c.PreviousState
		},
			wantState: types.InstanceStateNameShuttingDown, wantCode: 32, wantPrev: types.InstanceStateNameShuttingDown},
		{name: "terminated", advance: 30 * time.Second, act: func() (*types.InstanceState, *types.InstanceState) { return state(), nil },
			wantState: types.InstanceStateNameTerminated, wantCode: 48},
		{name: "terminating a terminated instance", act: func() (*types.InstanceState, *types.InstanceState) {
			c := terminate()
			return c.CurrentState, c.PreviousState
		},
			wantState: types.InstanceStateNameTerminated, wantCode: 48, wantPrev: types.InstanceStateNameTerminated},
	}
	for _, tt := range steps {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Advance(tt.advance)
			current, previous := tt.act()
			if current.Name != tt.wantState || aws.ToInt32(current.Code) != tt.wantCode {
				t.Errorf("state %s %d, want %s %d", current.Name, aws.ToInt32(current.Code), tt.wantState, tt.wantCode)
			}
			if tt.wantPrev != "" && (previous == nil || previous.Name != tt.wantPrev) {
				t.Errorf("previous state %+v, want %s", previous, tt.wantPrev)
			}
		})
	}
}
