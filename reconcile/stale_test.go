// SPDX-License-Identifier: Apache-2.0

package reconcile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A run on prices older than catalog.MaxPriceAge says so in its plan, in
// each fleet's status and in STATUS.md, in the words plans use; a run on
// fresh prices says nothing of them, and the status files drop it.
func TestRunSaysWhenItsPricesAreStale(t *testing.T) {
	e := newFakeEnv(t, mlFleet)
	// A catalog read age ago, and every source of its prices with it.
	dated := func(age time.Duration) *catalog.Catalog {
		c := *catalog.Default()
		c.FetchedAt = fakeNow.Add(-age)
		c.Sources = slices.Clone(c.Sources)
		for i := range c.Sources {
			c.Sources[i].Date = c.FetchedAt
		}
		return &c
	}
	read := func() (status.FleetStatus, string) {
		t.Helper()
		var st status.FleetStatus
		data, err := os.ReadFile(filepath.Join(e.dir, "status", "ml.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		summary, err := os.ReadFile(filepath.Join(e.dir, "status", status.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		return st, string(summary)
	}
	run := func(cat *catalog.Catalog) *reconcile.Result {
		t.Helper()
		res, err := e.run(context.Background(), func(o *reconcile.Options) { o.Catalog, o.Commit = cat, true })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	stale := dated(catalog.MaxPriceAge + time.Hour)
	want := stale.Staleness(fakeNow, catalog.MaxPriceAge)
	if want == "" {
		t.Fatal("prices older than MaxPriceAge are not stale")
	}
	res := run(stale)
	if !slices.Contains(res.Report.Plan.Warnings, want) {
		t.Errorf("the plan's warnings %q lack %q", res.Report.Plan.Warnings, want)
	}
	st, summary := read()
	if st.StalePrices != want {
		t.Errorf("status/ml.json says stalePrices %q, want %q", st.StalePrices, want)
	}
	if !strings.Contains(summary, "**Stale prices:** "+want) {
		t.Errorf("STATUS.md does not say the prices are stale:\n%s", summary)
	}

	res = run(dated(time.Hour))
	if slices.ContainsFunc(res.Report.Plan.Warnings, func(w string) bool { return strings.Contains(w, "prices are older") }) {
		t.Errorf("a run on fresh prices warns %q", res.Report.Plan.Warnings)
	}
	st, summary = read()
	if st.StalePrices != "" || strings.Contains(summary, "Stale prices") {
		t.Errorf("after a run on fresh prices the status still says they are stale: %q\n%s", st.StalePrices, summary)
	}
}
