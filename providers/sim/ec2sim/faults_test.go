// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
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

// TestFaultErrors drives each fault class through the SDK with retries off
// and checks the code, status and message EC2 would answer with.
func TestFaultErrors(t *testing.T) {
	// A zone of eu-north-1 without p5.48xlarge spot, and those with it,
	// which EC2 suggests instead.
	p5Spot := catalogZones(t, "eu-north-1", "p5.48xlarge", catalog.Spot)
	north, _ := catalog.Default().Region(catalog.AWS, "eu-north-1")
	noP5Spot := slices.DeleteFunc(slices.Clone(north.Zones), func(z string) bool { return slices.Contains(p5Spot, z) })
	if len(noP5Spot) == 0 {
		t.Fatal("every zone of eu-north-1 sells p5.48xlarge as spot")
	}
	p5SpotPrice, ok := catalogPrice("us-east-1", "us-east-1a", "p5.48xlarge", catalog.Spot)
	if !ok {
		t.Fatal("the catalog has no p5.48xlarge spot price in us-east-1a")
	}
	tests := []struct {
		name        string
		setup       func(w *sim.World)
		in          *ec2.RunInstancesInput
		wantCode    string
		wantStatus  int
		wantMessage string // a prefix
	}{
		{
			name:        "throttled",
			setup:       fault(sim.Fault{Kind: sim.FaultThrottle, Times: 1}),
			in:          runInput("p5.48xlarge", "us-east-1a", ""),
			wantCode:    "RequestLimitExceeded",
			wantStatus:  503,
			wantMessage: "Request limit exceeded.",
		},
		{
			name:        "injected stock-out",
			setup:       fault(sim.Fault{Kind: sim.FaultCapacity, Zone: "us-east-1a", Times: 1}),
			in:          runInput("p5.48xlarge", "us-east-1a", ""),
			wantCode:    "InsufficientInstanceCapacity",
			wantStatus:  500,
			wantMessage: "We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-1a). Our system will be working on provisioning additional capacity. You can currently get p5.48xlarge capacity by not specifying an Availability Zone in your request or choosing us-east-1b, ",
		},
		{
			name: "the world's stock-out",
			setup: func(w *sim.World) {
				w.SetCapacity(catalog.AWS, "us-east-1a", "p5.48xlarge", catalog.OnDemand, 0)
			},
			in:          runInput("p5.48xlarge", "us-east-1a", ""),
			wantCode:    "InsufficientInstanceCapacity",
			wantStatus:  500,
			wantMessage: "We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-1a).",
		},
		{
			name: "spot stock-out",
			setup: func(w *sim.World) {
				w.SetCapacity(catalog.AWS, "us-east-1a", "p5.48xlarge", catalog.Spot, 0)
			},
			in:          spot(runInput("p5.48xlarge", "us-east-1a", "")),
			wantCode:    "InsufficientInstanceCapacity",
			wantStatus:  500,
			wantMessage: "There is no Spot capacity available that matches your request.",
		},
		{
			name: "the P instances quota, in vCPUs",
			setup: func(w *sim.World) {
				w.SetQuota(catalog.AWS, "us-east-1", "L-417A185B", 96)
			},
			in:          runInput("p5.48xlarge", "us-east-1a", ""),
			wantCode:    "VcpuLimitExceeded",
			wantStatus:  400,
			wantMessage: "You have requested more vCPU capacity than your current vCPU limit of 96 allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.",
		},
		{
			name:        "injected quota",
			setup:       fault(sim.Fault{Kind: sim.FaultQuota, Times: 1}),
			in:          runInput("g4dn.xlarge", "us-east-1a", ""),
			wantCode:    "VcpuLimitExceeded",
			wantStatus:  400,
			wantMessage: "You have requested more vCPU capacity than your current vCPU limit of 0 allows",
		},
		{
			name: "spot quota",
			setup: func(w *sim.World) {
				w.SetQuota(catalog.AWS, "us-east-1", "L-3819A6DF", 0)
			},
			in:          spot(runInput("g4dn.xlarge", "us-east-1a", "")),
			wantCode:    "MaxSpotInstanceCountExceeded",
			wantStatus:  400,
			wantMessage: "Max spot instance count exceeded",
		},
		{
			name:        "server error",
			setup:       fault(sim.Fault{Kind: sim.FaultServerError, Times: 1}),
			in:          runInput("g4dn.xlarge", "us-east-1a", ""),
			wantCode:    "InternalError",
			wantStatus:  500,
			wantMessage: "An internal error has occurred",
		},
		{
			name:        "server error coded Unavailable",
			setup:       fault(sim.Fault{Kind: sim.FaultServerError, Code: "Unavailable", Times: 1}),
			in:          runInput("g4dn.xlarge", "us-east-1a", ""),
			wantCode:    "Unavailable",
			wantStatus:  503,
			wantMessage: "The server is overloaded and can't handle the request.",
		},
		{
			name:       "capacity coded InsufficientHostCapacity",
			setup:      fault(sim.Fault{Kind: sim.FaultCapacity, Code: "InsufficientHostCapacity", Times: 1}),
			in:         runInput("g4dn.xlarge", "us-east-1a", ""),
			wantCode:   "InsufficientHostCapacity",
			wantStatus: 500,
		},
		{
			name:        "capacity coded UnfulfillableCapacity",
			setup:       fault(sim.Fault{Kind: sim.FaultCapacity, Code: "UnfulfillableCapacity", Times: 1}),
			in:          spot(runInput("g4dn.xlarge", "us-east-1a", "")),
			wantCode:    "UnfulfillableCapacity",
			wantStatus:  400,
			wantMessage: "Unable to fulfill capacity",
		},
		{
			name:        "quota coded InstanceLimitExceeded",
			setup:       fault(sim.Fault{Kind: sim.FaultQuota, Code: "InstanceLimitExceeded", Times: 1}),
			in:          runInput("g4dn.xlarge", "us-east-1a", ""),
			wantCode:    "InstanceLimitExceeded",
			wantStatus:  400,
			wantMessage: "Your quota allows for 0 more running instance(s). You requested at least 1",
		},
		{
			name:        "quota coded MaxSpotInstanceCountExceeded",
			setup:       fault(sim.Fault{Kind: sim.FaultQuota, Code: "MaxSpotInstanceCountExceeded", Times: 1}),
			in:          spot(runInput("g4dn.xlarge", "us-east-1a", "")),
			wantCode:    "MaxSpotInstanceCountExceeded",
			wantStatus:  400,
			wantMessage: "Max spot instance count exceeded",
		},
		{
			name: "type not offered in the zone",
			setup: func(w *sim.World) {
			},
			in:          spot(runInput("p5.48xlarge", noP5Spot[0], "")),
			wantCode:    "Unsupported",
			wantStatus:  400,
			wantMessage: "Your requested instance type (p5.48xlarge) is not supported in your requested Availability Zone (" + noP5Spot[0] + "). Please retry your request by not specifying an Availability Zone or choosing " + strings.Join(p5Spot, ", ") + ".",
		},
		{
			name:        "spot price cap below the price",
			setup:       func(w *sim.World) {},
			in:          spotWithMaxPrice(runInput("p5.48xlarge", "us-east-1a", ""), "12.5"),
			wantCode:    "SpotMaxPriceTooLow",
			wantStatus:  400,
			wantMessage: "Your Spot request price of 12.500000 is lower than the minimum required Spot request fulfillment price of " + fmt.Sprintf("%.6f", float64(p5SpotPrice)/1e6) + ".",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			tt.setup(f.world)
			region := "us-east-1"
			if zone := aws.ToString(tt.in.Placement.AvailabilityZone); strings.HasPrefix(zone, "eu-north-1") {
				region = "eu-north-1"
			}
			_, err := f.client(region, 1).RunInstances(context.Background(), tt.in)
			msg := wantAPIError(t, err, tt.wantCode, tt.wantStatus)
			if !strings.HasPrefix(msg, tt.wantMessage) {
				t.Errorf("message %q, want it to start %q", msg, tt.wantMessage)
			}
			if n := len(f.world.List(catalog.AWS, nil)); n != 0 {
				t.Errorf("a refused launch left %d instances", n)
			}
		})
	}
}

func fault(fl sim.Fault) func(w *sim.World) {
	return func(w *sim.World) {
		if err := w.AddFaults(&fl); err != nil {
			panic(err)
		}
	}
}

func spotWithMaxPrice(in *ec2.RunInstancesInput, price string) *ec2.RunInstancesInput {
	spot(in).InstanceMarketOptions.SpotOptions.MaxPrice = aws.String(price)
	return in
}

// TestFaultRetries shows which faults the SDK's standard retryer rides out
// and that the front counts every attempt as a call.
func TestFaultRetries(t *testing.T) {
	tests := []struct {
		name      string
		fault     sim.Fault
		attempts  int
		wantCode  string // empty: the call succeeds
		wantCalls int
	}{
		{name: "two throttles, three attempts", fault: sim.Fault{Kind: sim.FaultThrottle, Op: "RunInstances", Times: 2}, attempts: 3, wantCalls: 3},
		{name: "three throttles outlast three attempts", fault: sim.Fault{Kind: sim.FaultThrottle, Op: "RunInstances", Times: 3}, attempts: 3, wantCode: "RequestLimitExceeded", wantCalls: 3},
		{name: "retries off", fault: sim.Fault{Kind: sim.FaultThrottle, Op: "RunInstances", Times: 1}, attempts: 1, wantCode: "RequestLimitExceeded", wantCalls: 1},
		// EC2 sends stock-outs as 500s, which the standard retryer retries.
		{name: "a stock-out is retried like any 500", fault: sim.Fault{Kind: sim.FaultCapacity, Op: "RunInstances", Times: 1}, attempts: 3, wantCalls: 2},
		{name: "a quota error is not retried", fault: sim.Fault{Kind: sim.FaultQuota, Op: "RunInstances", Times: 1}, attempts: 3, wantCode: "VcpuLimitExceeded", wantCalls: 1},
		{name: "a 5xx is retried", fault: sim.Fault{Kind: sim.FaultServerError, Op: "RunInstances", Times: 2}, attempts: 3, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			fault(tt.fault)(f.world)
			_, err := f.client("us-east-1", tt.attempts).RunInstances(context.Background(), runInput("g4dn.xlarge", "us-east-1a", "retry"))
			switch {
			case tt.wantCode == "" && err != nil:
				t.Fatalf("RunInstances: %v", err)
			case tt.wantCode != "":
				wantAPIError(t, err, tt.wantCode, map[string]int{"RequestLimitExceeded": 503, "VcpuLimitExceeded": 400}[tt.wantCode])
			}
			if got := f.world.Calls()["aws RunInstances"]; got != tt.wantCalls {
				t.Errorf("world counted %d RunInstances calls, want %d", got, tt.wantCalls)
			}
			wantInstances := 0
			if tt.wantCode == "" {
				wantInstances = 1
			}
			if got := len(f.world.List(catalog.AWS, nil)); got != wantInstances {
				t.Errorf("world holds %d instances, want %d", got, wantInstances)
			}
		})
	}
}

func TestLatencyFault(t *testing.T) {
	f := newFixture(t, sim.Config{})
	fault(sim.Fault{Kind: sim.FaultLatency, Op: "DescribeInstances", Latency: sim.Duration(150 * time.Millisecond), Times: 1})(f.world)
	c := f.client("us-east-1", 1)

	t.Run("the call is slow but succeeds", func(t *testing.T) {
		began := time.Now()
		if _, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < 150*time.Millisecond {
			t.Errorf("took %v, want at least 150ms", took)
		}
	})
	t.Run("a caller's deadline cuts the wait", func(t *testing.T) {
		fault(sim.Fault{Kind: sim.FaultLatency, Op: "DescribeInstances", Latency: sim.Duration(5 * time.Second), Times: 1})(f.world)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		began := time.Now()
		_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		if err == nil {
			t.Fatal("got no error past the deadline")
		}
		if took := time.Since(began); took > 2*time.Second {
			t.Errorf("took %v, the deadline was 50ms", took)
		}
	})
}

// TestFailLater: EC2 has no operations, so a launch that fails after it
// was accepted answers pending and then shows terminated with EC2's launch
// failure reason.
func TestFailLater(t *testing.T) {
	tests := []struct {
		name       string
		code       string
		wantReason string
	}{
		{name: "stock-out after accept", wantReason: "Server.InsufficientInstanceCapacity"},
		{name: "internal error after accept", code: "InternalError", wantReason: "Server.InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			fault(sim.Fault{Kind: sim.FaultFailLater, Code: tt.code, Op: "RunInstances", Times: 1})(f.world)
			c := f.client("us-east-1", 1)
			out := mustRun(t, c, runInput("p5.48xlarge", "us-east-1a", "later"))
			if out.Instances[0].State.Name != types.InstanceStateNamePending {
				t.Errorf("RunInstances answered %s, want pending", out.Instances[0].State.Name)
			}
			inst := describeOne(t, c, aws.ToString(out.Instances[0].InstanceId))
			if inst.State.Name != types.InstanceStateNameTerminated {
				t.Errorf("listed %s, want terminated", inst.State.Name)
			}
			if inst.StateReason == nil || aws.ToString(inst.StateReason.Code) != tt.wantReason ||
				!strings.HasPrefix(aws.ToString(inst.StateReason.Message), tt.wantReason+": ") {
				t.Errorf("state reason %+v, want %s", inst.StateReason, tt.wantReason)
			}
			// The failed instance holds no capacity: the next launch works.
			f.world.SetCapacity(catalog.AWS, "us-east-1a", "p5.48xlarge", catalog.OnDemand, 1)
			mustRun(t, c, runInput("p5.48xlarge", "us-east-1a", "after"))
		})
	}
}

func TestPreemption(t *testing.T) {
	tests := []struct {
		name    string
		preempt func(t *testing.T, f *fixture, id string)
	}{
		{
			name: "world.Preempt",
			preempt: func(t *testing.T, f *fixture, id string) {
				if err := f.world.Preempt(id); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "a preempt fault on the next call",
			preempt: func(t *testing.T, f *fixture, id string) {
				fault(sim.Fault{Kind: sim.FaultPreempt, Cloud: catalog.AWS, Op: "DescribeInstances", Times: 1})(f.world)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			c := f.client("us-east-1", 1)
			spotID := aws.ToString(mustRun(t, c, spot(runInput("p5.48xlarge", "us-east-1a", "spot"))).Instances[0].InstanceId)
			onDemand := aws.ToString(mustRun(t, c, runInput("p5.48xlarge", "us-east-1a", "od")).Instances[0].InstanceId)
			tt.preempt(t, f, spotID)

			preempted := describe(t, c, &ec2.DescribeInstancesInput{Filters: []types.Filter{
				{Name: aws.String("state-reason-code"), Values: []string{"Server.SpotInstanceTermination"}},
			}})
			if len(preempted) != 1 || aws.ToString(preempted[0].InstanceId) != spotID {
				t.Fatalf("preempted instances %v, want [%s]", ids(preempted), spotID)
			}
			inst := preempted[0]
			if inst.State.Name != types.InstanceStateNameTerminated || aws.ToInt32(inst.State.Code) != 48 {
				t.Errorf("state %+v, want terminated 48", inst.State)
			}
			if inst.InstanceLifecycle != types.InstanceLifecycleTypeSpot {
				t.Errorf("lifecycle %q, want spot", inst.InstanceLifecycle)
			}
			if got := aws.ToString(inst.StateReason.Message); got != "Server.SpotInstanceTermination: Spot instance termination" {
				t.Errorf("state reason message %q", got)
			}
			if other := describeOne(t, c, onDemand); other.State.Name != types.InstanceStateNameRunning {
				t.Errorf("on-demand instance %s, want running", other.State.Name)
			}
		})
	}
}

func TestCallCounting(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	ctx := context.Background()
	id := aws.ToString(mustRun(t, c, runInput("g4dn.xlarge", "us-east-1a", "")).Instances[0].InstanceId)
	for range 3 {
		describe(t, c, &ec2.DescribeInstancesInput{})
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{}); err != nil {
		t.Fatal(err)
	}
	// An action the front does not serve never reaches the world.
	if _, err := c.DescribeInternetGateways(ctx, &ec2.DescribeInternetGatewaysInput{}); err == nil {
		t.Fatal("DescribeInternetGateways succeeded")
	}
	want := map[string]int{
		"aws RunInstances":             1,
		"aws DescribeInstances":        3,
		"aws CreateTags":               1,
		"aws TerminateInstances":       1,
		"aws DescribeSpotPriceHistory": 1,
	}
	got := f.world.Calls()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s counted %d, want %d", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("calls %v, want exactly %v", got, want)
	}
}
