// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/uuid"
	"google.golang.org/api/option"

	gfaws "github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
)

func start(t *testing.T, state string) *Emulator {
	t.Helper()
	world, err := sim.New(sim.Config{StatePath: state, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := Start(world, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{emu.Endpoints.EC2, emu.Endpoints.ARM, emu.Endpoints.GCE, emu.Endpoints.AWSPricing, emu.Endpoints.AzurePrices, emu.Endpoints.GCPBilling, emu.Endpoints.OCI} {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			t.Fatalf("front listens on %s, beyond loopback", ep)
		}
	}
	return emu
}

func ec2Client(emu *Emulator) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(emu.Endpoints.EC2),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		HTTPClient:   gfaws.LoopbackHTTPClient(),
	})
}

func gceClient(t *testing.T, emu *Emulator) *compute.InstancesClient {
	t.Helper()
	c, err := compute.NewInstancesRESTClient(context.Background(), option.WithEndpoint(emu.Endpoints.GCE), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The emulator's clouds outlive it: what one run creates, the next sees.
func TestStateSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "state.json")
	emu := start(t, state)
	run, err := ec2Client(emu).RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeG4dnXlarge,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String("survivor"),
		Placement: &types.Placement{AvailabilityZone: aws.String("us-east-1a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	op, err := gceClient(t, emu).Insert(ctx, &computepb.InsertInstanceRequest{
		Project: "acme-gpu-fleet", Zone: "us-central1-a", RequestId: aws.String(uuid.NewString()),
		InstanceResource: &computepb.Instance{
			Name:        aws.String("survivor"),
			MachineType: aws.String("zones/us-central1-a/machineTypes/g2-standard-4"),
			Disks: []*computepb.AttachedDisk{{
				Boot:             aws.Bool(true),
				InitializeParams: &computepb.AttachedDiskInitializeParams{SourceImage: aws.String("projects/debian-cloud/global/images/family/debian-12")},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := emu.Close(ctx); err != nil {
		t.Fatal(err)
	}

	again := start(t, state)
	defer again.Close(ctx)
	out, err := ec2Client(again).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{*run.Instances[0].InstanceId}})
	if err != nil {
		t.Fatalf("the EC2 instance is gone after a restart: %v", err)
	}
	if got := out.Reservations[0].Instances[0]; *got.ClientToken != "survivor" {
		t.Errorf("instance after restart: %+v", got)
	}
	if _, err := gceClient(t, again).Get(ctx, &computepb.GetInstanceRequest{Project: "acme-gpu-fleet", Zone: "us-central1-a", Instance: "survivor"}); err != nil {
		t.Errorf("the GCE instance is gone after a restart: %v", err)
	}
}

func TestListensOnLoopbackOnly(t *testing.T) {
	world, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"0.0.0.0", "192.0.2.1", "::", "example.com"} {
		if emu, err := Start(world, Options{Host: host}); err == nil {
			emu.Close(context.Background())
			t.Errorf("Start listened on %s", host)
		}
	}
}
