// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A refresh that succeeds gives later runs its catalog; one that fails,
// or returns a catalog without offers, leaves them the last good one, is
// counted, logged and named in /readyz, which still answers 200; a
// catalog written before a later step failed is taken, and the failure
// still counted; the next success clears the condition.
func TestRefreshKeepsTheLastGoodCatalog(t *testing.T) {
	log, logged := testLog(t)
	dated := func(source string, age time.Duration) *catalog.Catalog {
		c := *catalog.Default()
		c.Source, c.FetchedAt = source, time.Now().Add(-age)
		return &c
	}
	start := dated("snapshot", 30*24*time.Hour)
	var next struct {
		cat *catalog.Catalog
		err error
	}
	a, err := New(Options{Repos: []Repo{{URL: "https://github.com/acme/fleets"}}, Log: log, Catalog: start,
		Refresh:      func(context.Context) (*catalog.Catalog, error) { return next.cat, next.err },
		RefreshEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	m := a.Metrics()
	// The repository is served; only the catalog's refreshes vary.
	a.workers[0].markLoaded()
	if age := counterValue(t, m, "gpufleet_catalog_age_seconds", nil); age < (30 * 24 * time.Hour).Seconds() {
		t.Errorf("the starting catalog's age is %gs, want a month's", age)
	}

	fresh := dated("aws+azure+gcp", time.Minute)
	written := dated("aws+azure+gcp", 0)
	empty := dated("aws", 0)
	empty.Offers = nil
	for i, step := range []struct {
		name      string
		cat       *catalog.Catalog
		err       error
		want      *catalog.Catalog
		successes float64
		failures  float64
		// condition is what the catalog's condition message holds, "" for
		// no condition.
		condition string
	}{
		{"success", fresh, nil, fresh, 1, 0, ""},
		{"price API down", nil, errors.New("refreshing azure prices, 500 Internal Server Error\nnothing was written"), fresh, 1, 1, "refreshing azure prices, 500 Internal Server Error"},
		{"no offers", empty, nil, fresh, 1, 2, "the refreshed catalog has no offers"},
		{"written, history not", written, errors.New("the history could not be saved"), written, 1, 3, "the history could not be saved"},
		{"success again", fresh, nil, fresh, 2, 3, ""},
	} {
		next.cat, next.err = step.cat, step.err
		ok := a.refreshOnce(context.Background())
		if ok != (step.condition == "") {
			t.Errorf("%s: refreshOnce reported %v", step.name, ok)
		}
		if got := a.Catalog(); got != step.want {
			t.Errorf("%s: runs plan with %s of %s, want %s of %s", step.name, got.Source, got.FetchedAt, step.want.Source, step.want.FetchedAt)
		}
		if got := counterValue(t, m, "gpufleet_catalog_refreshes_total", map[string]string{"result": "success"}); got != step.successes {
			t.Errorf("%s: %g successes counted, want %g", step.name, got, step.successes)
		}
		if got := counterValue(t, m, "gpufleet_catalog_refresh_failures_total", nil); got != step.failures {
			t.Errorf("%s: %g failures counted, want %g", step.name, got, step.failures)
		}
		if age := counterValue(t, m, "gpufleet_catalog_age_seconds", nil); age > time.Since(step.want.FetchedAt).Seconds()+1 {
			t.Errorf("%s: the catalog's age is %gs, want that of the one runs plan with", step.name, age)
		}
		code, body := readyz(t, h)
		if code != http.StatusOK {
			t.Errorf("%s: /readyz %d, want 200: the agent plans with the last good catalog", step.name, code)
		}
		switch c := body.Catalog; {
		case step.condition == "" && c != nil:
			t.Errorf("%s: /readyz names a catalog condition after a success: %+v", step.name, c)
		case step.condition != "" && (c == nil || c.Reason != ReasonRefreshFailed || c.Status || c.Message != step.condition || c.Source != step.want.Source):
			t.Errorf("%s: /readyz says of the catalog %+v, want %s with %q", step.name, c, ReasonRefreshFailed, step.condition)
		}
		if step.condition != "" && !strings.Contains(logged.String(), step.condition) {
			t.Errorf("step %d, %s: the failure is not in the log:\n%s", i, step.name, logged.String())
		}
	}
	if last := counterValue(t, m, "gpufleet_catalog_refresh_last_success_timestamp_seconds", nil); last <= 0 || last > float64(time.Now().Unix()+1) {
		t.Errorf("the last success timestamp is %g", last)
	}
}
