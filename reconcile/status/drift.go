// SPDX-License-Identifier: Apache-2.0

package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
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
	// report holds (a bound of the caller's), so there are more than Instances shows.
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
