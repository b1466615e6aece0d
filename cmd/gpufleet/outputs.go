// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/planner/backtest"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// jsonOutput is one kind of JSON gpufleet writes: every -o json output, and
// the files it reads and writes for other tools. Each has a JSON Schema,
// made from the type it is written from (gpufleet schema json KIND).
type jsonOutput struct {
	kind, title string
	example     any
}

var jsonOutputs = []jsonOutput{
	{"plan", "gpufleet plan -o json: the placement, its cost and the actions to reach it", planner.Report{}},
	{"review", "gpufleet plan --base REF -o json: a pull request's plan against its base", planner.Review{}},
	{"run", "gpufleet reconcile -o json and apply -o json: what a run did", runOutput{}},
	{"validation", "gpufleet validate -o json: whether a repository's specs load", validation{}},
	{"catalog", "gpufleet catalog show -o json: what a price catalog holds", catalogSummary{}},
	{"backtest", "gpufleet backtest -o json: what a policy would have cost over a price history", backtest.Report{}},
	{"capacity", "gpufleet capacity -o json: quotas and offerings as the clouds report them", capacityView{}},
	{"status", "gpufleet status -o json: the committed status of a repository's fleets", statusOutput{}},
	{"drift", "gpufleet drift -o json: how the clouds differ from the committed status", driftOutput{}},
	{"adoption", "gpufleet adopt -o json: the instances an adoption takes, refuses or took", render.Adoption{}},
	{"version", "gpufleet version -o json: what the binary was built as", buildInfo{}},
	{"emulator", "gpufleet sim inspect -o json: the emulated clouds' own view of their instances", simInstances{}},
	{"observed", "the file gpufleet plan --observed reads: what runs", observedFile{}},
	{"saved-plan", "the file gpufleet plan -out writes and apply PLANFILE reads", savedPlanBody{}},
	{"error", "what any -o json command prints on stdout when it fails", jsonErrorBody{}},
}

// runOutput is what reconcile and apply say with -o json.
type runOutput struct {
	// Revision is the commit reconciled.
	Revision string            `json:"revision"`
	Outcome  reconcile.Outcome `json:"outcome"`
	// Commit is the status commit made, "" when none was.
	Commit string `json:"commit,omitempty"`
	Rounds int    `json:"rounds"`
	// Counts sum up the run in nodes and calls, as the text says them.
	Counts       status.RunCounts               `json:"counts"`
	Applied      []appliedAction                `json:"applied"`
	NotConverged []string                       `json:"notConverged,omitempty"`
	Report       *planner.Report                `json:"report,omitempty"`
	Statuses     map[string]*status.FleetStatus `json:"statuses,omitempty"`
	Blocklist    []status.BlockedOffer          `json:"blocklist,omitempty"`
}

// appliedAction is a create or delete a run tried, and how it went.
type appliedAction struct {
	Fleet    string             `json:"fleet"`
	Kind     planner.ActionKind `json:"kind"`
	Workload string             `json:"workload"`
	Offer    string             `json:"offer"`
	Instance string             `json:"instance,omitempty"`
	Error    string             `json:"error,omitempty"`
}

func newRunOutput(res *reconcile.Result, outcome reconcile.Outcome) runOutput {
	out := runOutput{Revision: res.Revision, Outcome: outcome, Rounds: res.Rounds, Counts: res.Counts, Applied: []appliedAction{},
		NotConverged: res.NotConverged, Report: res.Report, Statuses: res.Statuses, Blocklist: res.Blocklist}
	if !res.Commit.IsZero() {
		out.Commit = res.Commit.String()
	}
	for _, a := range res.Applied {
		out.Applied = append(out.Applied, appliedAction{Fleet: a.Fleet, Kind: a.Kind, Workload: a.Workload, Offer: a.Offer, Instance: a.Instance, Error: a.Error})
	}
	return out
}

// statusOutput is the committed status of a repository.
type statusOutput struct {
	Repo   string                `json:"repo"`
	Fleets []*status.FleetStatus `json:"fleets"`
}

// simInstances is the emulator's listing.
type simInstances struct {
	State     string          `json:"state"`
	Instances []*sim.Instance `json:"instances"`
}

// observedFile is the --observed format, after its envelope.
type observedFile struct {
	Instances []planner.Instance `json:"instances"`
}

// savedPlanBody is a saved plan after its envelope.
type savedPlanBody struct {
	reconcile.SavedPlanBody
}

// jsonErrorBody is jsonError after its envelope.
type jsonErrorBody struct {
	Error jsonErrorDetail `json:"error"`
}

func outputKinds() []string {
	var out []string
	for _, o := range jsonOutputs {
		out = append(out, o.kind)
	}
	return out
}

// writeOutput writes v as the -o json output of a kind.
func (a *app) writeOutput(kind string, v any) error {
	if !slices.ContainsFunc(jsonOutputs, func(o jsonOutput) bool { return o.kind == kind }) {
		panic("gpufleet: unregistered output kind " + kind)
	}
	return render.Output(a.stdout, kind, v)
}

func (a *app) schemaJSONCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "json KIND",
		Short: "Print the JSON Schema of one of gpufleet's JSON outputs or files",
		Long: `json prints the JSON Schema (draft 2020-12) of a JSON output, made from the
types gpufleet writes it from. Every output opens with "formatVersion" and
"kind"; the kinds are:

` + kindList(),
		Example:   "  gpufleet schema json plan > plan.schema.json",
		Args:      cobra.ExactArgs(1),
		ValidArgs: outputKinds(),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, o := range jsonOutputs {
				if o.kind == args[0] {
					return render.JSON(a.stdout, render.JSONSchema(o.kind, o.title, o.example))
				}
			}
			return fmt.Errorf("no JSON output is called %q; there are %s", args[0], strings.Join(outputKinds(), ", "))
		},
	}
}

func kindList() string {
	var b strings.Builder
	for _, o := range jsonOutputs {
		fmt.Fprintf(&b, "  %-11s %s\n", o.kind, o.title)
	}
	return b.String()
}
