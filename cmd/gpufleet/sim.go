// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/lambda"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func (a *app) simCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run and inspect the emulator of EC2, Azure Resource Manager and Compute Engine",
		Long: `sim runs gpufleet's emulator of the three clouds' APIs on loopback, so
gpufleet (or any SDK client) can be tried with no cloud account. Its state
lives in a file, so separate runs see the same clouds.`,
	}
	cmd.AddCommand(a.simServeCommand(), a.simInspectCommand(), a.simLaunchCommand(), a.simTerminateCommand())
	return cmd
}

func (a *app) simServeCommand() *cobra.Command {
	var state, host string
	var files ruleFiles
	var seed uint64
	var ports [5]int
	var useTLS bool
	var latency time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the emulated clouds on loopback until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if latency < 0 {
				return fmt.Errorf("--op-latency cannot be negative, got %v", latency)
			}
			opts := emulator.Options{Host: host, EC2Port: ports[0], ARMPort: ports[1], GCEPort: ports[2], LambdaPort: ports[3], OCIPort: ports[4]}
			if useTLS {
				opts.TLSDir = tlsDirFor(state)
			}
			if cmd.Flags().Changed("op-latency") {
				files.latency = &sim.Latency{Launch: latency, Operation: latency}
			}
			files.newAccount = true
			emu, err := a.startEmulator(sim.Config{Seed: seed, StatePath: state}, files, opts)
			if err != nil {
				return err
			}
			ep := emu.Endpoints
			took := ""
			if l := emu.World.Latency(); l != (sim.Latency{}) {
				took = fmt.Sprintf(", launches take %v, operations %v", l.Launch, l.Operation)
			}
			fmt.Fprintf(a.stdout, `gpufleet emulator serving (state %s, seed %d%s)
  EC2  %s
  ARM  %s
  GCE  %s
  AWS Price List       %s
  Azure Retail Prices  %s
  GCP Cloud Billing    %s
  Lambda Cloud         %s
  OCI                  %s
Point gpufleet at it with:
  export GPUFLEET_AWS_ENDPOINT=%s GPUFLEET_AZURE_ENDPOINT=%s GPUFLEET_GCP_ENDPOINT=%s GPUFLEET_LAMBDA_ENDPOINT=%s GPUFLEET_OCI_ENDPOINT=%s
`, state, seed, took, ep.EC2, ep.ARM, ep.GCE, ep.AWSPricing, ep.AzurePrices, ep.GCPBilling, ep.Lambda, ep.OCI, ep.EC2, ep.ARM, ep.GCE, ep.Lambda, ep.OCI)
			if useTLS {
				ca := emu.TLS.CA
				fmt.Fprintf(a.stdout, `The fronts serve https under the emulator's own CA, %s. Trust it with:
  export SSL_CERT_FILE=%s   # gpufleet and other Go programs
  export AWS_CA_BUNDLE=%s   # the AWS CLI and SDKs
  export REQUESTS_CA_BUNDLE=%s   # the Azure SDK for Python, az
  gcloud config set core/custom_ca_certs_file %s
`, ca, ca, ca, ca, ca)
			}
			fmt.Fprintln(a.stdout, "Stop with Ctrl-C; the state is saved on the way out.")
			<-cmd.Context().Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := emu.Close(ctx); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "emulator stopped; state saved to %s\n", state)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "file the emulated clouds are kept in [GPUFLEET_SIM_STATE]")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed for every random choice of the emulator")
	cmd.Flags().StringVar(&files.faults, "faults", "", "JSON file of the faults to inject, replacing those the state holds")
	cmd.Flags().StringVar(&files.quotas, "quotas", "", `JSON file of the quota limits, replacing those the state holds (a new state has a new account's: {"base": "unlimited"} lifts them)`)
	cmd.Flags().StringVar(&files.account, "account", "", "JSON file of what the accounts hold (instance profiles, identities, service accounts, SSM parameters, denied operations), replacing what the state holds")
	cmd.Flags().StringVar(&files.rateLimits, "rate-limits", "", "JSON file of the request rate limits to enforce, replacing those the state holds (none in a new state)")
	cmd.Flags().DurationVar(&latency, "op-latency", 0, "how long launches, deletes and long-running operations take, kept in the state (0 in a new state: at once)")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "serve https under a CA of the emulator's own, kept in a directory beside the state")
	cmd.Flags().StringVar(&host, "host", "127.0.0.1", "loopback address to listen on")
	cmd.Flags().IntVar(&ports[0], "ec2-port", 0, "EC2 port; 0 picks a free one")
	cmd.Flags().IntVar(&ports[1], "arm-port", 0, "Azure Resource Manager port; 0 picks a free one")
	cmd.Flags().IntVar(&ports[2], "gce-port", 0, "Compute Engine port; 0 picks a free one")
	cmd.Flags().IntVar(&ports[3], "lambda-port", 0, "Lambda Cloud API port; 0 picks a free one")
	cmd.Flags().IntVar(&ports[4], "oci-port", 0, "OCI port (every region's compute and identity hosts, told apart by Host); 0 picks a free one")
	return cmd
}

// tlsDirFor is where the certificates of the emulator whose state is at
// state are kept: beside it, named after it, so two emulators with their
// own states keep their own CAs.
func tlsDirFor(state string) string {
	return strings.TrimSuffix(state, filepath.Ext(state)) + "-tls"
}

func (a *app) simInspectCommand() *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "List what runs where in the emulated clouds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json"); err != nil {
				return err
			}
			world, err := sim.New(sim.Config{StatePath: state})
			if err != nil {
				return err
			}
			instances := world.Instances()
			slices.SortStableFunc(instances, func(x, y *sim.Instance) int {
				return cmp.Or(cmp.Compare(x.Cloud, y.Cloud), cmp.Compare(x.Zone, y.Zone), cmp.Compare(x.Seq, y.Seq))
			})
			if output == "json" {
				if instances == nil {
					instances = []*sim.Instance{}
				}
				return a.writeOutput("emulator", simInstances{State: state, Instances: instances})
			}
			fmt.Fprintf(a.stdout, "%d instances in %s\n", len(instances), state)
			if len(instances) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CLOUD\tZONE\tID\tTYPE\tMARKET\tSTATE\tFLEET\tWORKLOAD")
			for _, inst := range instances {
				st := string(inst.State)
				if inst.Preempted {
					st = "preempted"
				}
				name, fleet, workload := simOwner(inst)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", inst.Cloud, inst.Zone, cmp.Or(name, inst.ID), inst.InstanceType, inst.Market, st,
					cmp.Or(fleet, "-"), cmp.Or(workload, "-"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", envOr("GPUFLEET_SIM_STATE", ".gpufleet/sim-state.json"), "file the emulated clouds are kept in [GPUFLEET_SIM_STATE]")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// simOwner is an emulated instance's name and the fleet and workload it
// belongs to: by its ownership tags, or on Lambda Cloud, which has none,
// by its name.
func simOwner(inst *sim.Instance) (name, fleet, workload string) {
	if inst.Cloud == catalog.Lambda {
		name = inst.Properties["name"]
		fleet, workload, _, _ = lambda.ParseNodeName(name)
		return name, fleet, workload
	}
	return inst.Name, inst.Tags[providers.TagFleet], inst.Tags[providers.TagWorkload]
}
