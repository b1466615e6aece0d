// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// DriftInput is what CompareDrift compares.
type DriftInput struct {
	// Recorded are the fleets' committed statuses, by fleet.
	Recorded map[string]*status.FleetStatus
	// State is the repository state, whose deletes issued are gpufleet's
	// own doing; nil for none.
	State *status.RepoState
	// Observed are the owned instances the clouds list.
	Observed []planner.Instance
	// Foreign are the instances in gpufleet's name space it does not own.
	Foreign []providers.Unowned
	// Fleets are the fleets of the specs, summed up even with no drift.
	Fleets []string
	// At is when the clouds were listed.
	At time.Time
}

// CompareDrift is how the clouds differ from the committed status. It is
// pure: what a run or `gpufleet drift` observed goes in, the report comes
// out.
//
// A node going from pending to running is no drift: that is what the
// status expects of it. Nor is an instance the status has as gone and the
// cloud no longer lists, nor one gpufleet deleted itself, which a cloud
// may still show for a while.
func CompareDrift(in DriftInput) *status.Drift {
	type key struct{ cloud, id string }
	recorded := map[key]planner.Instance{}
	deleted := map[key]bool{}
	for name, st := range in.Recorded {
		for _, w := range st.Workloads {
			for _, inst := range w.Instances {
				k, err := planner.ParseOfferKey(inst.Offer)
				if err != nil {
					// status.ReadFleets refuses such a file.
					continue
				}
				recorded[key{k.Cloud, inst.ID}] = planner.Instance{ID: inst.ID, OfferKey: k, Fleet: name, Workload: w.Name, Token: inst.Token, Bootstrap: inst.Bootstrap, State: inst.State}
			}
		}
		for _, a := range st.LastActions {
			if a.Kind == planner.Delete && a.Error == "" {
				cloud, _, _ := strings.Cut(a.Offer, "/")
				deleted[key{cloud, a.Instance}] = true
			}
		}
	}
	if in.State != nil {
		for _, d := range in.State.Deleted {
			deleted[key{d.Cloud, d.ID}] = true
		}
	}

	d := &status.Drift{ObservedAt: in.At, Instances: []status.DriftedInstance{}}
	listed := map[key]bool{}
	for _, obs := range in.Observed {
		k := key{obs.Cloud, obs.ID}
		listed[k] = true
		rec, ok := recorded[k]
		switch {
		case !ok:
			if !gone(obs.State) && !deleted[k] {
				d.Instances = append(d.Instances, status.DriftedInstance{Kind: status.DriftExtra, Cloud: obs.Cloud, ID: obs.ID, Fleet: obs.Fleet, Workload: obs.Workload, Observed: ptr(obs)})
			}
		case gone(obs.State) && !gone(rec.State):
			if !deleted[k] {
				d.Instances = append(d.Instances, status.DriftedInstance{Kind: status.DriftMissing, Cloud: obs.Cloud, ID: obs.ID, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec), Observed: ptr(obs)})
			}
		default:
			if changes := instanceChanges(rec, obs); len(changes) > 0 && !deleted[k] {
				d.Instances = append(d.Instances, status.DriftedInstance{Kind: status.DriftChanged, Cloud: obs.Cloud, ID: obs.ID, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec), Observed: ptr(obs), Changes: changes})
			}
		}
	}
	for k, rec := range recorded {
		if !listed[k] && !gone(rec.State) && !deleted[k] {
			d.Instances = append(d.Instances, status.DriftedInstance{Kind: status.DriftMissing, Cloud: k.cloud, ID: k.id, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec)})
		}
	}
	for _, u := range in.Foreign {
		if gone(u.State) {
			continue
		}
		d.Instances = append(d.Instances, status.DriftedInstance{Kind: status.DriftForeign, Cloud: u.Offer.Cloud, ID: u.ID, Fleet: u.Tags[providers.TagFleet], Workload: u.Tags[providers.TagWorkload], Foreign: ptr(u)})
	}
	slices.SortFunc(d.Instances, func(a, b status.DriftedInstance) int {
		return cmp.Or(cmp.Compare(slices.Index(status.DriftKinds, a.Kind), slices.Index(status.DriftKinds, b.Kind)),
			cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.ID, b.ID))
	})

	byFleet := map[string]*status.FleetDrift{}
	fleet := func(name string) *status.FleetDrift {
		if byFleet[name] == nil {
			byFleet[name] = &status.FleetDrift{Fleet: name}
		}
		return byFleet[name]
	}
	for _, name := range in.Fleets {
		fleet(name)
	}
	for name, st := range in.Recorded {
		fleet(name).StatusObservedAt = st.Observed
	}
	for _, inst := range d.Instances {
		if inst.Fleet == "" {
			// A foreign instance that names no fleet is nobody's.
			continue
		}
		f := fleet(inst.Fleet)
		switch inst.Kind {
		case status.DriftMissing:
			f.Missing++
		case status.DriftExtra:
			f.Extra++
		case status.DriftChanged:
			f.Changed++
		case status.DriftForeign:
			f.Foreign++
		}
	}
	d.Fleets = []status.FleetDrift{}
	for _, name := range slices.Sorted(maps.Keys(byFleet)) {
		d.Fleets = append(d.Fleets, *byFleet[name])
	}
	return d
}

// gone reports whether a state is an instance that no longer works nor
// holds anything: ended by its cloud or by someone.
func gone(s planner.State) bool {
	return s == planner.StateTerminated || s == planner.StatePreempted
}

// instanceChanges are the fields of an instance the cloud has otherwise
// than the status, in a fixed order.
func instanceChanges(rec, obs planner.Instance) []status.FieldChange {
	var out []status.FieldChange
	add := func(field, r, o string) {
		if r != o {
			out = append(out, status.FieldChange{Field: field, Recorded: r, Observed: o})
		}
	}
	// A node the status saw starting has started: that is no drift.
	if !(rec.State == planner.StatePending && obs.State == planner.StateRunning) {
		add("state", string(rec.State), string(obs.State))
	}
	add("region", rec.Region, obs.Region)
	add("zone", rec.Zone, obs.Zone)
	add("instanceType", rec.InstanceType, obs.InstanceType)
	add("market", string(rec.Market), string(obs.Market))
	add("tag "+providers.TagFleet, rec.Fleet, obs.Fleet)
	add("tag "+providers.TagWorkload, rec.Workload, obs.Workload)
	add("tag "+providers.TagToken, rec.Token, obs.Token)
	add("tag "+providers.TagBootstrap, rec.Bootstrap, obs.Bootstrap)
	return out
}

func ptr[T any](v T) *T { return &v }
