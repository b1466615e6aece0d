// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// driftCollector exposes gpufleet_drift_instances from the drift each
// repository's last run began on, a snapshot at a time as fleetCollector
// does, with every kind of every fleet at zero when nothing drifted, so
// that an alert on it has a series from the first run.
type driftCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	byRepo map[string][]status.FleetDrift
}

func newDriftCollector() *driftCollector {
	return &driftCollector{
		desc: prometheus.NewDesc("gpufleet_drift_instances",
			`Instances that differed from a fleet's committed status when the last run began, by kind: missing (terminated or gone outside gpufleet), extra (owned, not in the status), changed (another state, offer or tags). Foreign instances are counted by gpufleet drift, not here.`,
			[]string{"repo", "fleet", "kind"}, nil),
		byRepo: map[string][]status.FleetDrift{},
	}
}

// set keeps what a run found; a run that did not list the clouds leaves
// what the last one found.
func (c *driftCollector) set(repo string, d *status.Drift) {
	if d == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byRepo[repo] = slices.Clone(d.Fleets)
}

func (c *driftCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *driftCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, repo := range slices.Sorted(maps.Keys(c.byRepo)) {
		for _, f := range c.byRepo[repo] {
			for _, kind := range []status.DriftKind{status.DriftMissing, status.DriftExtra, status.DriftChanged} {
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(f.Of(kind)), repo, f.Fleet, string(kind))
			}
		}
	}
}
