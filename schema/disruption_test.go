// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"path/filepath"
	"testing"
)

const budgetFleet = `package gpufleet

fleets: f: {
	owner: "o"
	workloads: w: {
		gpu: {model: "L4", perNode: 1}
		nodes: 1
	}
}
`

func TestLoadDisruptionBudget(t *testing.T) {
	tests := []struct {
		name, defaults, fleet string
		want                  Budget
		fleetWant             *Budget
		refuseOver            int
	}{
		{name: "default", want: DefaultBudget},
		{name: "count", defaults: `disruption: budget: 8`, want: Budget{Nodes: 8, Field: "defaults.disruption.budget", Raw: "8"}},
		{name: "zero", defaults: `disruption: budget: 0`, want: Budget{Field: "defaults.disruption.budget", Raw: "0"}},
		{name: "percent", defaults: `disruption: budget: "12.5%"`, want: Budget{Percent: true, Hundredths: 1250, Field: "defaults.disruption.budget", Raw: "12.5%"}},
		{name: "maxDeletions is a count budget", defaults: `maxDeletions: 3`, want: Budget{Nodes: 3, Field: "defaults.maxDeletions", Raw: "3"}},
		{name: "refuseOver", defaults: `disruption: refuseOver: 40`, want: DefaultBudget, refuseOver: 40},
		{
			name: "a fleet's own budget", defaults: `disruption: budget: 8`, fleet: `fleets: f: defaults: disruption: budget: "5%"`,
			want:      Budget{Nodes: 8, Field: "defaults.disruption.budget", Raw: "8"},
			fleetWant: &Budget{Percent: true, Hundredths: 500, Field: "fleets.f.defaults.disruption.budget", Raw: "5%"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(minimalConfig+"gpufleet: defaults: {"+tt.defaults+"}\n"))
			writeFile(t, filepath.Join(dir, "fleets", "f.cue"), []byte(budgetFleet+tt.fleet+"\n"))
			repo, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			d := repo.Config.Defaults
			if d.Disruption.Budget != tt.want {
				t.Errorf("budget = %+v, want %+v", d.Disruption.Budget, tt.want)
			}
			if tt.refuseOver > 0 && (d.Disruption.RefuseOver == nil || *d.Disruption.RefuseOver != tt.refuseOver || d.Disruption.RefuseField != "defaults.disruption.refuseOver") {
				t.Errorf("refuseOver = %v at %q, want %d", d.Disruption.RefuseOver, d.Disruption.RefuseField, tt.refuseOver)
			}
			want := tt.want
			if tt.fleetWant != nil {
				want = *tt.fleetWant
			}
			if got := d.For(&repo.Fleets[0]).Disruption.Budget; got != want {
				t.Errorf("fleet budget = %+v, want %+v", got, want)
			}
		})
	}
}

func TestBudgetLimitRoundsUp(t *testing.T) {
	tests := []struct {
		budget Budget
		live   int
		want   int
	}{
		{Budget{Percent: true, Hundredths: 1000}, 576, 58},
		{Budget{Percent: true, Hundredths: 1000}, 2000, 200},
		{Budget{Percent: true, Hundredths: 1000}, 3, 1},
		{Budget{Percent: true, Hundredths: 1}, 1, 1},
		{Budget{Percent: true, Hundredths: 0}, 500, 0},
		{Budget{Percent: true, Hundredths: 10000}, 7, 7},
		{Budget{Percent: true, Hundredths: 1000}, 0, 0},
		{Budget{Nodes: 5}, 2, 5},
		{Budget{Nodes: 0}, 2, 0},
	}
	for _, tt := range tests {
		if got := tt.budget.Limit(tt.live); got != tt.want {
			t.Errorf("%+v.Limit(%d) = %d, want %d", tt.budget, tt.live, got, tt.want)
		}
	}
}

func TestLoadBadDisruptionBudget(t *testing.T) {
	tests := []struct {
		name, defaults, fleet, want string
	}{
		{name: "negative", defaults: `disruption: budget: -3`,
			want: `gpufleet.cue:4:42: gpufleet.defaults.disruption.budget: -3 is not a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`},
		{name: "over 100%", defaults: `disruption: budget: "150%"`,
			want: `gpufleet.cue:4:42: gpufleet.defaults.disruption.budget: "150%" is over 100%: a budget cannot allow more nodes than the fleet has`},
		{name: "not a number", defaults: `disruption: budget: "ten%"`,
			want: `gpufleet.cue:4:42: gpufleet.defaults.disruption.budget: "ten%" is not a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`},
		{name: "negative share", defaults: `disruption: budget: "-5%"`,
			want: `gpufleet.cue:4:42: gpufleet.defaults.disruption.budget: "-5%" is negative: a budget is a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`},
		{name: "fraction of a node", defaults: `disruption: budget: 2.5`,
			want: `gpufleet.cue:4:42: gpufleet.defaults.disruption.budget: 2.5 is not a whole number of nodes: a budget is a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`},
		{name: "both names", defaults: `maxDeletions: 3, disruption: budget: 4`,
			want: `gpufleet.cue:4:36: gpufleet.defaults.maxDeletions: maxDeletions is the former name of defaults.disruption.budget: set one of the two`},
		{name: "a fleet's budget", fleet: `fleets: f: defaults: disruption: budget: "10 %"`,
			want: `fleets/f.cue:10:42: fleets.f.defaults.disruption.budget: "10 %" is not a count of nodes (0 or more) or a share of the fleet's live nodes such as "10%"`},
		{name: "unknown fleet default", fleet: `fleets: f: defaults: blocklistFor: "1h"`,
			want: `fleets/f.cue:10:22: fleets.f.defaults.blocklistFor: field not allowed: a fleet may set migrationThreshold, spotRiskPremium and disruption for itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "gpufleet.cue"), []byte(minimalConfig+"gpufleet: defaults: {"+tt.defaults+"}\n"))
			writeFile(t, filepath.Join(dir, "fleets", "f.cue"), []byte(budgetFleet+tt.fleet+"\n"))
			if got := loadErrors(t, dir); got != tt.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestLoadMaxPerZone(t *testing.T) {
	fleet := func(spread string) string {
		return `package gpufleet

fleets: f: {
	owner: "o"
	workloads: w: {
		gpu: {model: "L4", perNode: 1}
		nodes: 100
		` + spread + `
	}
}
`
	}
	tests := []struct{ name, spread, want string }{
		{name: "zero", spread: `spread: maxPerZone: 0`, want: `fleets/f.cue:8:23: fleets.f.workloads.w.spread.maxPerZone: invalid value 0 (out of bound >=1)`},
		{name: "too few zones", spread: `spread: maxPerZone: 10, placement: zones: ["us-east-1a", "us-east-1b"]`,
			want: `fleets/f.cue:8:23: fleets.f.workloads.w.spread.maxPerZone: 10 nodes per zone in the 2 zones allowed can hold only 20 nodes of 100`},
		{name: "a zone gang", spread: `spread: maxPerZone: 50, placement: gang: "zone"`,
			want: `fleets/f.cue:8:23: fleets.f.workloads.w.spread.maxPerZone: gang placement puts all 100 nodes in one zone, but the spread allows at most 50 per zone`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := minimalRepo(t)
			writeFile(t, filepath.Join(dir, "fleets", "f.cue"), []byte(fleet(tt.spread)))
			if got := loadErrors(t, dir); got != tt.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
	dir := minimalRepo(t)
	writeFile(t, filepath.Join(dir, "fleets", "f.cue"), []byte(fleet(`spread: maxPerZone: 20`)))
	repo, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := repo.Fleets[0].Workloads[0].Spread.MaxPerZone; got != 20 {
		t.Errorf("maxPerZone = %d, want 20", got)
	}
}
