// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile"
)

// Metrics are what the agent tells Prometheus. They live in a registry of
// their own, so embedding the agent, or running two in a test, never
// collides with another library's use of the global one.
type Metrics struct {
	registry *prometheus.Registry
	// runMu makes recording a run and a scrape exclusive. A registry
	// gathers its collectors in no fixed order, so without it a scrape
	// that began before a run was recorded could read the fleets from
	// before the run and the run's count from after it.
	runMu       sync.RWMutex
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	apiRequests *prometheus.CounterVec
	nodes       *prometheus.CounterVec
	failedCalls *prometheus.CounterVec
	fleets      *fleetCollector
	drift       *driftCollector
	catalog     *catalogMetrics
}

// NewMetrics makes the metrics in a new registry.
func NewMetrics(log *slog.Logger) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_reconcile_runs_total",
			Help: "Reconcile runs by repository and result: success (converged: the clouds match the specs), not_converged (the run finished but the clouds still differ from the specs: creates failed, nodes could not be placed...), error (the run stopped with an error), or locked (another reconciler held the repository lock).",
		}, []string{"repo", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpufleet_reconcile_duration_seconds",
			Help: "How long reconcile runs take, from fetching the repository to pushing the status.",
			// From a run with nothing to do (a second or two) to one that
			// waits out slow launches and failovers (many minutes).
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12),
		}, []string{"repo"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpufleet_last_success_timestamp_seconds",
			Help: "When the last reconcile of a repository that converged (result=\"success\") ended, in seconds since the Unix epoch.",
		}, []string{"repo"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_cloud_api_requests_total",
			Help: "Calls to the cloud providers by cloud, operation (offers, list, create, delete) and code (ok, or the cloud's error code or kind). One call may be several HTTP requests: retries and pages.",
		}, []string{"cloud", "operation", "code"}),
		nodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_reconcile_nodes_total",
			Help: `Nodes reconcile runs acted on, by repository and action: created, deleted, replaced (created after a first try found its pool out of capacity or quota; counted in created too), failed (meant to be created or deleted, still not done when the run ended, because of an error). Counted in nodes, not tries.`,
		}, []string{"repo", "action"}),
		failedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_reconcile_failed_calls_total",
			Help: "Create and delete calls of reconcile runs that a cloud answered with an error, by repository; a batch launch is one call. gpufleet_cloud_api_requests_total has them by cloud and code.",
		}, []string{"repo"}),
		fleets:  newFleetCollector(),
		drift:   newDriftCollector(),
		catalog: newCatalogMetrics(),
	}
	m.registry.MustRegister(m.runs, m.duration, m.lastSuccess, m.apiRequests, m.nodes, m.failedCalls, m.fleets, buildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(m.catalog.collectors()...)
	m.registry.MustRegister(m.drift)
	return m
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{Registry: m.registry})
}

// Gatherer gathers the registry between runs' records, for tests and for
// serving it elsewhere.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		m.runMu.RLock()
		defer m.runMu.RUnlock()
		return m.registry.Gather()
	})
}

// addRepo starts a repository's run counters at zero, so that rate() and
// alerts on errors work from the first scrape rather than the first error,
// and its last success at now, the agent's start: a repository that never
// converges then trips the staleness alert half an hour in, rather than
// having no series to alert on.
func (m *Metrics) addRepo(repo string, now time.Time) {
	for _, result := range results {
		m.runs.WithLabelValues(repo, result)
	}
	for _, action := range nodeActions {
		m.nodes.WithLabelValues(repo, action)
	}
	m.failedCalls.WithLabelValues(repo)
	m.lastSuccess.WithLabelValues(repo).Set(float64(now.UnixNano()) / 1e9)
}

// nodeActions are the action labels of gpufleet_reconcile_nodes_total.
var nodeActions = []string{"created", "deleted", "replaced", "failed"}

// recordRun counts a run and, when it produced a status, takes the fleet
// metrics from it. Only a success, a run that converged, moves the last
// success timestamp.
func (m *Metrics) recordRun(repo, result string, took time.Duration, res *reconcile.Result, now time.Time) {
	// A run stopped before it read the repository (clone failed, lock
	// held) says nothing new about the fleets: keep what the last one said.
	// A scrape that sees the run counted sees what it left: see runMu.
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if res != nil && res.Revision != "" {
		m.fleets.set(repo, snapshotOf(res))
		m.drift.set(repo, res.Drift)
	}
	if res != nil {
		c := res.Counts
		for action, n := range map[string]int{"created": c.Created, "deleted": c.Deleted, "replaced": c.Replaced, "failed": c.FailedNodes} {
			m.nodes.WithLabelValues(repo, action).Add(float64(n))
		}
		m.failedCalls.WithLabelValues(repo).Add(float64(c.FailedCalls))
	}
	if result == resultSuccess {
		m.lastSuccess.WithLabelValues(repo).Set(float64(now.UnixNano()) / 1e9)
	}
	m.duration.WithLabelValues(repo).Observe(took.Seconds())
	m.runs.WithLabelValues(repo, result).Inc()
}

// fleetCollector exposes the fleet metrics from the status each
// repository's last run wrote. Collecting from a snapshot, rather than
// setting gauges one by one, means a scrape never sees half of one run's
// numbers and half of another's, and a removed fleet or cloud disappears
// instead of freezing at its last value.
type fleetCollector struct {
	cost, nodes, blocked *prometheus.Desc
	mu                   sync.Mutex
	byRepo               map[string]repoSnapshot
}

// repoSnapshot is what one repository's status says, ready to expose.
type repoSnapshot struct {
	fleets      []fleetSample
	blocklisted int
}

type fleetSample struct {
	fleet string
	cost  float64
	nodes []nodeSample
}

type nodeSample struct {
	workload, cloud, state string
	count                  int
}

func newFleetCollector() *fleetCollector {
	return &fleetCollector{
		cost: prometheus.NewDesc("gpufleet_fleet_cost_dollars_per_hour",
			"What a fleet's running nodes cost per hour, in US dollars, as its status says.", []string{"repo", "fleet"}, nil),
		nodes: prometheus.NewDesc("gpufleet_fleet_nodes",
			`Nodes of a fleet's workload: state="desired" is what the spec asks for (cloud=""); running and pending are observed, by cloud.`,
			[]string{"repo", "fleet", "workload", "cloud", "state"}, nil),
		blocked: prometheus.NewDesc("gpufleet_blocklisted_offers",
			"Offers a repository has blocklisted after a stock-out, a quota error or a preemption.", []string{"repo"}, nil),
		byRepo: map[string]repoSnapshot{},
	}
}

// snapshotOf turns a run's statuses into samples.
func snapshotOf(res *reconcile.Result) repoSnapshot {
	snap := repoSnapshot{blocklisted: len(res.Blocklist)}
	for _, name := range slices.Sorted(maps.Keys(res.Statuses)) {
		st := res.Statuses[name]
		f := fleetSample{fleet: name, cost: float64(st.CostMicros) / 1e6}
		for _, w := range st.Workloads {
			f.nodes = append(f.nodes, nodeSample{workload: w.Name, state: "desired", count: w.Desired})
			// Clouds the plan uses show up even with nothing running yet,
			// so a dashboard sees running=0 rather than no line at all.
			count := map[string]map[planner.State]int{}
			for _, p := range w.Placed {
				if count[p.Offer.Cloud] == nil {
					count[p.Offer.Cloud] = map[planner.State]int{}
				}
			}
			for _, inst := range w.Instances {
				cloud, _, _ := strings.Cut(inst.Offer, "/")
				if count[cloud] == nil {
					count[cloud] = map[planner.State]int{}
				}
				count[cloud][inst.State]++
			}
			for _, cloud := range slices.Sorted(maps.Keys(count)) {
				for _, state := range []planner.State{planner.StateRunning, planner.StatePending} {
					f.nodes = append(f.nodes, nodeSample{workload: w.Name, cloud: cloud, state: string(state), count: count[cloud][state]})
				}
			}
		}
		snap.fleets = append(snap.fleets, f)
	}
	return snap
}

func (c *fleetCollector) set(repo string, snap repoSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byRepo[repo] = snap
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cost
	ch <- c.nodes
	ch <- c.blocked
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The repository is part of a fleet's identity: two repositories may
	// each define a fleet of the same name.
	for _, repo := range slices.Sorted(maps.Keys(c.byRepo)) {
		snap := c.byRepo[repo]
		for _, f := range snap.fleets {
			ch <- prometheus.MustNewConstMetric(c.cost, prometheus.GaugeValue, f.cost, repo, f.fleet)
			for _, n := range f.nodes {
				ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(n.count), repo, f.fleet, n.workload, n.cloud, n.state)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.blocked, prometheus.GaugeValue, float64(snap.blocklisted), repo)
	}
}
