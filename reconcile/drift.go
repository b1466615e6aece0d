package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// DriftKind says how an instance in a cloud differs from what the
// committed status says of it.
type DriftKind string

const (
	// DriftMissing is an instance the status has as a node that the cloud
	// no longer runs: terminated, preempted or gone, by no action of
	// gpufleet's.
	DriftMissing DriftKind = "missing"
	// DriftExtra is an instance gpufleet owns in the cloud that the status
	// does not list.
	DriftExtra DriftKind = "extra"
	// DriftChanged is an instance both list, with another state, offer or
	// ownership tags than the status has.
	DriftChanged DriftKind = "changed"
	// DriftForeign is an instance in gpufleet's name space (a tag key with
	// its prefix, or a name of its form) that it does not own.
	DriftForeign DriftKind = "foreign"
)

// DriftKinds are the kinds in the order reports list them.
var DriftKinds = []DriftKind{DriftMissing, DriftExtra, DriftChanged, DriftForeign}

// Drift is how the clouds differ from the committed status.
type Drift struct {
	// ObservedAt is when the clouds were listed.
	ObservedAt time.Time `json:"observedAt"`
	// Fleets sums the drift up by fleet, for every fleet of the specs or
	// the status, sorted by name.
	Fleets []FleetDrift `json:"fleets"`
	// Instances are the instances that differ, by kind, fleet, cloud and
	// id.
	Instances []DriftedInstance `json:"instances"`
	// ForeignUnchecked names the clouds whose foreign instances were not
	// looked for: their provider cannot list what gpufleet does not own.
	ForeignUnchecked []string `json:"foreignUnchecked,omitempty"`
	// ForeignTruncated says a cloud listed more foreign instances than a
	// report holds (maxForeign), so there are more than Instances shows.
	ForeignTruncated bool `json:"foreignTruncated,omitempty"`
}

// FleetDrift is one fleet's drift, counted by kind.
type FleetDrift struct {
	Fleet string `json:"fleet"`
	// StatusObservedAt is when the run that wrote the fleet's status
	// observed the clouds; zero when the fleet has no status.
	StatusObservedAt time.Time `json:"statusObservedAt,omitzero"`
	Missing          int       `json:"missing"`
	Extra            int       `json:"extra"`
	Changed          int       `json:"changed"`
	Foreign          int       `json:"foreign"`
}

// Total is the fleet's drifted instances.
func (f FleetDrift) Total() int { return f.Missing + f.Extra + f.Changed + f.Foreign }

// Of is the count of one kind.
func (f FleetDrift) Of(kind DriftKind) int {
	switch kind {
	case DriftMissing:
		return f.Missing
	case DriftExtra:
		return f.Extra
	case DriftChanged:
		return f.Changed
	case DriftForeign:
		return f.Foreign
	}
	return 0
}

// DriftedInstance is one instance that differs from the status.
type DriftedInstance struct {
	Kind  DriftKind `json:"kind"`
	Cloud string    `json:"cloud"`
	ID    string    `json:"id"`
	// Fleet and Workload are the status's for a missing or changed
	// instance, the cloud's tags' otherwise; empty for a foreign instance
	// that names none.
	Fleet    string `json:"fleet,omitempty"`
	Workload string `json:"workload,omitempty"`
	// Recorded is the instance as the status has it; nil for extra and
	// foreign instances.
	Recorded *planner.Instance `json:"recorded,omitempty"`
	// Observed is the instance as the cloud lists it; nil for a missing
	// one the cloud lists no more, and for a foreign one.
	Observed *planner.Instance `json:"observed,omitempty"`
	// Foreign is what the cloud says of an instance gpufleet does not own.
	Foreign *providers.Unowned `json:"foreign,omitempty"`
	// Changes are, for a changed instance, the fields that differ.
	Changes []FieldChange `json:"changes,omitempty"`
}

// FieldChange is a field of an instance the cloud has otherwise than the
// status.
type FieldChange struct {
	Field    string `json:"field"`
	Recorded string `json:"recorded"`
	Observed string `json:"observed"`
}

// Count is how many instances differ.
func (d *Drift) Count() int { return len(d.Instances) }

// Only is the drift of some fleets: their instances, and the foreign ones
// whose tags name one of them.
func (d *Drift) Only(fleets []string) *Drift {
	out := *d
	out.Fleets = slices.DeleteFunc(slices.Clone(d.Fleets), func(f FleetDrift) bool { return !slices.Contains(fleets, f.Fleet) })
	out.Instances = slices.DeleteFunc(slices.Clone(d.Instances), func(i DriftedInstance) bool { return !slices.Contains(fleets, i.Fleet) })
	return &out
}

// Fleet is the drift of one fleet, zero when it has none.
func (d *Drift) Fleet(name string) FleetDrift {
	for _, f := range d.Fleets {
		if f.Fleet == name {
			return f
		}
	}
	return FleetDrift{Fleet: name}
}

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
func CompareDrift(in DriftInput) *Drift {
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

	d := &Drift{ObservedAt: in.At, Instances: []DriftedInstance{}}
	listed := map[key]bool{}
	for _, obs := range in.Observed {
		k := key{obs.Cloud, obs.ID}
		listed[k] = true
		rec, ok := recorded[k]
		switch {
		case !ok:
			if !gone(obs.State) && !deleted[k] {
				d.Instances = append(d.Instances, DriftedInstance{Kind: DriftExtra, Cloud: obs.Cloud, ID: obs.ID, Fleet: obs.Fleet, Workload: obs.Workload, Observed: ptr(obs)})
			}
		case gone(obs.State) && !gone(rec.State):
			if !deleted[k] {
				d.Instances = append(d.Instances, DriftedInstance{Kind: DriftMissing, Cloud: obs.Cloud, ID: obs.ID, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec), Observed: ptr(obs)})
			}
		default:
			if changes := instanceChanges(rec, obs); len(changes) > 0 && !deleted[k] {
				d.Instances = append(d.Instances, DriftedInstance{Kind: DriftChanged, Cloud: obs.Cloud, ID: obs.ID, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec), Observed: ptr(obs), Changes: changes})
			}
		}
	}
	for k, rec := range recorded {
		if !listed[k] && !gone(rec.State) && !deleted[k] {
			d.Instances = append(d.Instances, DriftedInstance{Kind: DriftMissing, Cloud: k.cloud, ID: k.id, Fleet: rec.Fleet, Workload: rec.Workload, Recorded: ptr(rec)})
		}
	}
	for _, u := range in.Foreign {
		if gone(u.State) {
			continue
		}
		d.Instances = append(d.Instances, DriftedInstance{Kind: DriftForeign, Cloud: u.Offer.Cloud, ID: u.ID, Fleet: u.Tags[providers.TagFleet], Workload: u.Tags[providers.TagWorkload], Foreign: ptr(u)})
	}
	slices.SortFunc(d.Instances, func(a, b DriftedInstance) int {
		return cmp.Or(cmp.Compare(slices.Index(DriftKinds, a.Kind), slices.Index(DriftKinds, b.Kind)),
			cmp.Compare(a.Fleet, b.Fleet), cmp.Compare(a.Cloud, b.Cloud), cmp.Compare(a.ID, b.ID))
	})

	byFleet := map[string]*FleetDrift{}
	fleet := func(name string) *FleetDrift {
		if byFleet[name] == nil {
			byFleet[name] = &FleetDrift{Fleet: name}
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
		case DriftMissing:
			f.Missing++
		case DriftExtra:
			f.Extra++
		case DriftChanged:
			f.Changed++
		case DriftForeign:
			f.Foreign++
		}
	}
	d.Fleets = []FleetDrift{}
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
func instanceChanges(rec, obs planner.Instance) []FieldChange {
	var out []FieldChange
	add := func(field, r, o string) {
		if r != o {
			out = append(out, FieldChange{Field: field, Recorded: r, Observed: o})
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

// Summary is the drift in a few words: "3 missing, 1 foreign", or "no
// drift".
func (f FleetDrift) Summary() string {
	var parts []string
	for _, kind := range DriftKinds {
		if n := f.Of(kind); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, kind))
		}
	}
	if len(parts) == 0 {
		return "no drift"
	}
	return strings.Join(parts, ", ")
}
