// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// sample is one series of a metric family.
type sample struct {
	labels map[string]string
	value  float64
	// count is a histogram's sample count.
	count uint64
}

func samples(families map[string]*dto.MetricFamily, name string) []sample {
	f := families[name]
	if f == nil {
		return nil
	}
	var out []sample
	for _, m := range f.GetMetric() {
		s := sample{labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			s.value = m.GetCounter().GetValue()
		case m.Gauge != nil:
			s.value = m.GetGauge().GetValue()
		case m.Histogram != nil:
			s.value = m.GetHistogram().GetSampleSum()
			s.count = m.GetHistogram().GetSampleCount()
		}
		out = append(out, s)
	}
	return out
}

// sum adds up the series of a metric whose labels include match.
func sum(families map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range samples(families, name) {
		if matches(s.labels, match) {
			total += s.value
		}
	}
	return total
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// scrape gathers the metrics as a scrape does, by name.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	got, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]*dto.MetricFamily{}
	for _, f := range got {
		families[f.GetName()] = f
	}
	return families
}

// counterValue reads a metric straight from the registry.
func counterValue(t *testing.T, m *Metrics, name string, match map[string]string) float64 {
	t.Helper()
	return sum(scrape(t, m), name, match)
}

// scrape reads /metrics as Prometheus does and parses it with the text
// parser of the exposition format.
func (s *served) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(ct, "version=0.0.4") {
		s.t.Errorf("metrics content type %q, want the text exposition format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("/metrics is not in the exposition format: %v", err)
	}
	return families
}

// The metrics say what the status the run committed says.
func TestMetricsMatchTheStatus(t *testing.T) {
	o := newOrigin(t, 24)
	// The training gang's cheapest region runs dry, so the run fails over
	// and blocklists offers, and the cloud answers with an error code.
	first := firstChoice(t, "training", "pretrain")
	region, _ := catalog.Default().Region(first.Cloud, first.Region)
	for _, zone := range region.Zones {
		o.World.SetCapacity(first.Cloud, zone, first.InstanceType, first.Market, 0)
	}
	log, _ := testLog(t)
	s := serve(t, o.options(log), nil)
	run := s.nextRun()
	if run.err != nil {
		t.Fatal(run.err)
	}
	fleets, state := o.Statuses()
	if len(fleets) != 3 || state == nil || len(state.Blocklist) == 0 {
		t.Fatalf("the run left %d fleet statuses and state %+v; the test needs three and a blocklist", len(fleets), state)
	}
	families := s.scrape()
	repo := s.agent.workers[0].name

	for name, st := range fleets {
		if got, want := sum(families, "gpufleet_fleet_cost_dollars_per_hour", map[string]string{"fleet": name}), float64(st.CostMicros)/1e6; got != want {
			t.Errorf("%s costs $%g/h in the metrics, $%g/h in the status", name, got, want)
		}
		for _, w := range st.Workloads {
			desired := samples(families, "gpufleet_fleet_nodes")
			got := -1.0
			for _, s := range desired {
				if matches(s.labels, map[string]string{"fleet": name, "workload": w.Name, "state": "desired", "cloud": ""}) {
					got = s.value
				}
			}
			if got != float64(w.Desired) {
				t.Errorf("%s/%s: desired %g in the metrics, %d in the status", name, w.Name, got, w.Desired)
			}
			for _, state := range []planner.State{planner.StateRunning, planner.StatePending} {
				want := map[string]float64{}
				for _, inst := range w.Instances {
					if inst.State == state {
						want[strings.SplitN(inst.Offer, "/", 2)[0]]++
					}
				}
				gotByCloud := map[string]float64{}
				for _, s := range samples(families, "gpufleet_fleet_nodes") {
					if matches(s.labels, map[string]string{"fleet": name, "workload": w.Name, "state": string(state)}) && s.value != 0 {
						gotByCloud[s.labels["cloud"]] = s.value
					}
				}
				if !maps.Equal(gotByCloud, want) {
					t.Errorf("%s/%s %s by cloud: metrics %v, status %v", name, w.Name, state, gotByCloud, want)
				}
			}
			if got := sum(families, "gpufleet_fleet_nodes", map[string]string{"fleet": name, "workload": w.Name, "state": "running"}); got != float64(w.Running) {
				t.Errorf("%s/%s: %g running in the metrics, %d in the status", name, w.Name, got, w.Running)
			}
		}
	}
	if got := sum(families, "gpufleet_blocklisted_offers", nil); got != float64(len(state.Blocklist)) {
		t.Errorf("%g blocklisted offers in the metrics, %d in status/gpufleet.json", got, len(state.Blocklist))
	}

	for result, want := range map[string]float64{"success": 1, "error": 0, "locked": 0} {
		if got := sum(families, "gpufleet_reconcile_runs_total", map[string]string{"repo": repo, "result": result}); got != want {
			t.Errorf("runs_total{result=%q} = %g, want %g", result, got, want)
		}
	}
	if d := samples(families, "gpufleet_reconcile_duration_seconds"); len(d) != 1 || d[0].count != 1 || d[0].labels["repo"] != repo {
		t.Errorf("duration histogram: %+v", d)
	}
	if last := sum(families, "gpufleet_last_success_timestamp_seconds", map[string]string{"repo": repo}); last <= 0 || last > float64(time.Now().Unix()+1) {
		t.Errorf("last success at %g", last)
	}

	// Every launch call the run made was counted once, by its outcome: as
	// many as the emulator served, a batch launch being one call.
	var ok, failed float64
	for _, a := range run.res.Applied {
		if a.Kind != planner.Create {
			continue
		}
		if a.Error == "" {
			ok++
		} else {
			failed++
		}
	}
	launches := func(match map[string]string) float64 {
		n := 0.0
		for _, op := range []string{"create", "create_batch"} {
			labels := maps.Clone(match)
			labels["operation"] = op
			n += sum(families, "gpufleet_cloud_api_requests_total", labels)
		}
		return n
	}
	served := o.World.Calls()
	for cloud, ops := range map[string][]string{"aws": {"RunInstances"}, "azure": {"put"}, "gcp": {"instances.insert", "instances.bulkInsert"}} {
		want := 0
		for _, op := range ops {
			want += served[cloud+" "+op]
		}
		if got := launches(map[string]string{"cloud": cloud}); got != float64(want) || want == 0 {
			t.Errorf("%s: %g launch calls counted, the emulator served %d", cloud, got, want)
		}
	}
	if got := launches(map[string]string{"code": "ok"}); got == 0 || got > ok {
		t.Errorf("%g successful launch calls counted for %g nodes created", got, ok)
	}
	if got := launches(map[string]string{"cloud": "gcp", "code": "ZONE_RESOURCE_POOL_EXHAUSTED"}); got == 0 || got > failed {
		t.Errorf("%g stock-outs counted, %g creates failed", got, failed)
	}
	for _, cloud := range []string{"aws", "azure", "gcp"} {
		if got := sum(families, "gpufleet_cloud_api_requests_total", map[string]string{"cloud": cloud, "operation": "list", "code": "ok"}); got < 1 {
			t.Errorf("no list of %s counted", cloud)
		}
	}

	// The run's nodes are counted as its status counts them: the training
	// nodes that met the dry region were re-placed, none failed, and the
	// failed calls are counted apart.
	var counts status.RunCounts
	for _, st := range fleets {
		if st.LastRun != nil {
			counts = counts.Add(*st.LastRun)
		}
	}
	if counts != run.res.Counts || counts.Replaced == 0 || counts.FailedNodes != 0 || counts.FailedCalls == 0 {
		t.Errorf("the statuses count %+v, the run %+v; want nodes re-placed, none failed, calls failed", counts, run.res.Counts)
	}
	for action, want := range map[string]int{"created": counts.Created, "deleted": counts.Deleted, "replaced": counts.Replaced, "failed": counts.FailedNodes} {
		if got := sum(families, "gpufleet_reconcile_nodes_total", map[string]string{"repo": repo, "action": action}); got != float64(want) {
			t.Errorf("nodes_total{action=%q} = %g, want %d", action, got, want)
		}
	}
	if got := sum(families, "gpufleet_reconcile_failed_calls_total", map[string]string{"repo": repo}); got != float64(counts.FailedCalls) {
		t.Errorf("failed_calls_total = %g, want %d", got, counts.FailedCalls)
	}
}

func TestCodeOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"ok", nil, "ok"},
		{"cloud code", fmt.Errorf("creating, %w", &providers.Error{Kind: providers.KindCapacity, Code: "InsufficientInstanceCapacity"}), "InsufficientInstanceCapacity"},
		{"kind only", &providers.Error{Kind: providers.KindThrottled}, "throttled"},
		{"cancelled", fmt.Errorf("listing, %w", context.Canceled), "canceled"},
		{"anything else", errors.New("boom"), "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeOf(tt.err); got != tt.want {
				t.Errorf("codeOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// A fleet gone from a repository's last status is gone from the metrics,
// and a fleet name two repositories share is two series, one per
// repository, not a duplicate that would fail the whole scrape.
func TestFleetMetricsFollowTheLastRun(t *testing.T) {
	m := NewMetrics(slog.New(slog.DiscardHandler))
	status := func(fleets ...string) *reconcile.Result {
		res := &reconcile.Result{Revision: "abc", Statuses: map[string]*status.FleetStatus{}}
		for _, f := range fleets {
			res.Statuses[f] = &status.FleetStatus{Fleet: f, CostMicros: 1_500_000}
		}
		return res
	}
	m.recordRun("repo-a", resultSuccess, time.Second, status("training", "batch"), time.Now())
	m.recordRun("repo-b", resultSuccess, time.Second, status("batch"), time.Now())
	if got := counterValue(t, m, "gpufleet_fleet_cost_dollars_per_hour", nil); got != 4.5 {
		t.Errorf("$%g/h over the fleets, want 4.5 (batch in each repository)", got)
	}
	if got := counterValue(t, m, "gpufleet_fleet_cost_dollars_per_hour", map[string]string{"repo": "repo-b", "fleet": "batch"}); got != 1.5 {
		t.Errorf("repo-b's batch at $%g/h, want 1.5", got)
	}
	m.recordRun("repo-a", resultSuccess, time.Second, status("training"), time.Now())
	m.recordRun("repo-b", resultError, time.Second, nil, time.Now())
	if got := counterValue(t, m, "gpufleet_fleet_cost_dollars_per_hour", map[string]string{"fleet": "batch"}); got != 1.5 {
		t.Errorf("batch at $%g/h: repo-b's last status still has it", got)
	}
	m.recordRun("repo-b", resultSuccess, time.Second, status(), time.Now())
	if got := counterValue(t, m, "gpufleet_fleet_cost_dollars_per_hour", map[string]string{"fleet": "batch"}); got != 0 {
		t.Errorf("batch, removed everywhere, still at $%g/h", got)
	}
}

// firstChoice is the offer an offline plan of the example repository puts
// a workload's first nodes on.
func firstChoice(t *testing.T, fleet, workload string) planner.OfferKey {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, examples.FleetRepo); err != nil {
		t.Fatal(err)
	}
	repo, err := schema.Load(filepath.Join(dir, "fleet-repo"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Solve(planner.NewInput(repo, catalog.Default()))
	if err != nil {
		t.Fatal(err)
	}
	w := plan.Workload(fleet, workload)
	if w == nil || len(w.Placements) == 0 {
		t.Fatalf("the example's plan places no %s/%s", fleet, workload)
	}
	return w.Placements[0].Offer
}

// gpufleet_build_info is 1 with the version the command line reports and
// the Go version that built the binary.
func TestBuildInfo(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "v9.8.7"
	m := NewMetrics(slog.New(slog.DiscardHandler))
	if got := counterValue(t, m, "gpufleet_build_info", map[string]string{"version": "v9.8.7", "goversion": runtime.Version()}); got != 1 {
		t.Errorf("gpufleet_build_info{version=v9.8.7} = %g, want 1", got)
	}
}
