// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type simTerminateFlags struct {
	cloud, region, endpoint, state string
}

// simTerminateCommand ends emulated instances as someone with console
// access would, behind gpufleet's back: what drift and the next run see as
// instances gone missing.
func (a *app) simTerminateCommand() *cobra.Command {
	var f simTerminateFlags
	cmd := &cobra.Command{
		Use:   "terminate --cloud CLOUD ID...",
		Short: "Terminate emulated instances outside gpufleet, as a person in a console would",
		Long: `terminate ends instances of the emulated clouds without gpufleet knowing:
nothing is recorded in any status, so the next drift or reconcile finds them
missing.

With an EC2 endpoint (--endpoint, or GPUFLEET_AWS_ENDPOINT as sim serve
prints it) it calls the running emulator's TerminateInstances through the
AWS SDK, in --region. Otherwise it changes the emulator's state file
(--state), which no sim serve may be running on: that one would write its
own state over it. IDs are EC2 instance ids, Azure VM and GCE instance
names, and Lambda Cloud instance ids.`,
		Example: `  gpufleet sim terminate --cloud aws --region us-east-1 i-0eac0c20afbfc44f2
  gpufleet sim terminate --cloud gcp --state /tmp/clouds.json gf-spread-l4-8ef3846b24c2-0`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			if !slices.Contains(catalog.Clouds, f.cloud) {
				return fmt.Errorf("--cloud must be one of %v, not %q", catalog.Clouds, f.cloud)
			}
			if f.endpoint == "" && f.cloud == catalog.AWS && !cmd.Flags().Changed("state") {
				f.endpoint = envOr("GPUFLEET_AWS_ENDPOINT", "")
			}
			var err error
			if f.endpoint != "" {
				err = a.terminateThroughEC2(cmd.Context(), f, ids)
			} else {
				err = a.terminateInState(f, ids)
			}
			if err != nil {
				return err
			}
			for _, id := range ids {
				fmt.Fprintf(a.stdout, "terminated %s instance %s\n", f.cloud, id)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.cloud, "cloud", "", "the cloud of the instances: "+cloudNames())
	cmd.Flags().StringVar(&f.region, "region", "", "the AWS region of the instances, through an EC2 endpoint")
	cmd.Flags().StringVar(&f.endpoint, "endpoint", "", "the running emulator's EC2 endpoint; GPUFLEET_AWS_ENDPOINT when empty, unless --state is given")
	cmd.Flags().StringVar(&f.state, "state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "the emulator's state file, when no endpoint is given [GPUFLEET_SIM_STATE]")
	return cmd
}

// terminateThroughEC2 terminates instances through the EC2 API of a
// running emulator, with the throwaway credentials it takes.
func (a *app) terminateThroughEC2(ctx context.Context, f simTerminateFlags, ids []string) error {
	if f.cloud != catalog.AWS {
		return fmt.Errorf("--endpoint is EC2's: a running emulator's %s instances are terminated through its state file, with sim serve stopped", f.cloud)
	}
	if f.region == "" {
		return errors.New("--region is needed to terminate through EC2: its instances are regional")
	}
	u, err := url.Parse(f.endpoint)
	if err != nil || !outbound.Loopback(u.Hostname()) {
		// The credentials below are the emulator's; a real endpoint
		// would be sent them, and its instances ended.
		return fmt.Errorf("--endpoint %q is not on loopback: sim terminate ends emulated instances only", f.endpoint)
	}
	client := ec2.New(ec2.Options{
		Region:       f.region,
		BaseEndpoint: awssdk.String(f.endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", ""),
		HTTPClient:   aws.LoopbackHTTPClient(),
	})
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		return fmt.Errorf("terminating %d instances in %s, %w", len(ids), f.region, err)
	}
	return nil
}

// terminateInState ends instances in the emulator's state file: EC2's
// shut down as TerminateInstances does, Azure's and GCE's deleted outright
// as a finished delete operation leaves them.
func (a *app) terminateInState(f simTerminateFlags, ids []string) error {
	world, err := sim.New(sim.Config{StatePath: f.state})
	if err != nil {
		return err
	}
	byName := map[string]*sim.Instance{}
	for _, inst := range world.Instances() {
		if inst.Cloud != f.cloud {
			continue
		}
		byName[inst.ID] = inst
		if inst.Name != "" {
			byName[inst.Name] = inst
		}
	}
	// Every id is checked before any instance ends, as EC2 does.
	var found []*sim.Instance
	for _, id := range ids {
		inst, ok := byName[id]
		if !ok {
			return fmt.Errorf("%s: no %s instance %s", f.state, f.cloud, id)
		}
		found = append(found, inst)
	}
	for _, inst := range found {
		if f.cloud == catalog.AWS {
			if _, err := world.Terminate(inst.ID); err != nil {
				return fmt.Errorf("terminating %s, %w", inst.ID, err)
			}
			continue
		}
		world.Remove(inst.ID)
	}
	if err := world.Save(); err != nil {
		return fmt.Errorf("saving %s, %w", f.state, err)
	}
	return nil
}
