// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Refresher reads the clouds' prices into a new catalog, written where
// the next start of the agent reads it, and returns it. An error with a
// catalog means the catalog was written but something after it failed
// (the price history); an error without one leaves the catalog as it was.
type Refresher func(ctx context.Context) (*catalog.Catalog, error)

// refreshRetry bounds the wait after a failed refresh: a price API that
// was down for a moment should not leave the prices old for a whole
// interval.
const refreshRetry = 10 * time.Minute

// Condition reasons of the catalog, in /readyz.
const (
	// ReasonRefreshFailed: the latest refresh of the catalog failed; runs
	// plan with the last good one.
	ReasonRefreshFailed = "RefreshFailed"
)

// CatalogCondition is what /readyz says of the catalog while its refresh
// fails. The agent stays ready: it plans with the last good catalog.
type CatalogCondition struct {
	Type   string `json:"type"`
	Status bool   `json:"status"`
	Reason string `json:"reason"`
	// Message is the first line of the latest refresh's error.
	Message string `json:"message"`
	// Since is when the refreshes began to fail.
	Since time.Time `json:"since"`
	// Source and FetchedAt are the catalog runs plan with.
	Source    string    `json:"source"`
	FetchedAt time.Time `json:"fetchedAt"`
}

// catalogRefreshed is the condition type.
const catalogRefreshed = "CatalogRefreshed"

// catalogs holds the catalog runs plan with and how its refreshes go.
type catalogs struct {
	mu      sync.Mutex
	current *catalog.Catalog
	// failing is the condition while refreshes fail, nil after a success.
	failing *CatalogCondition
}

// Catalog is the catalog a run starting now plans with: the one the agent
// started with, or the one the last good refresh returned.
func (a *Agent) Catalog() *catalog.Catalog {
	a.catalogs.mu.Lock()
	defer a.catalogs.mu.Unlock()
	return a.catalogs.current
}

// catalogCondition is the catalog's condition, nil while it is refreshed
// without error.
func (a *Agent) catalogCondition() *CatalogCondition {
	a.catalogs.mu.Lock()
	defer a.catalogs.mu.Unlock()
	if a.catalogs.failing == nil {
		return nil
	}
	c := *a.catalogs.failing
	return &c
}

// refreshLoop refreshes the catalog every RefreshEvery until ctx ends.
// The first refresh comes when the catalog the agent started with is
// RefreshEvery old, at once if it is older: a restart does not read every
// price list again.
func (a *Agent) refreshLoop(ctx context.Context) {
	every := a.opts.RefreshEvery
	wait := max(0, every-a.Catalog().Age(time.Now()))
	a.log.Info("prices are refreshed on a schedule", "every", every, "first in", wait.Round(time.Second))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		next := every
		if !a.refreshOnce(ctx) {
			next = min(every, refreshRetry)
		}
		if ctx.Err() != nil {
			return
		}
		timer.Reset(next)
	}
}

// refreshOnce runs one refresh and reports whether it succeeded. A
// catalog it returns with no offers, or an error alone, leaves runs with
// the catalog they had.
func (a *Agent) refreshOnce(ctx context.Context) bool {
	started := time.Now()
	cat, err := a.opts.Refresh(ctx)
	if ctx.Err() != nil {
		// Cut short by shutdown: neither a success nor a failure.
		return true
	}
	if cat != nil && len(cat.Offers) == 0 {
		cat, err = nil, errors.Join(err, errors.New("the refreshed catalog has no offers"))
	}
	now := time.Now()
	a.catalogs.mu.Lock()
	if cat != nil {
		a.catalogs.current = cat
	}
	current := a.catalogs.current
	if err == nil {
		a.catalogs.failing = nil
	} else {
		if a.catalogs.failing == nil {
			a.catalogs.failing = &CatalogCondition{Type: catalogRefreshed, Reason: ReasonRefreshFailed, Since: now}
		}
		a.catalogs.failing.Message = firstLine(err.Error())
		a.catalogs.failing.Source, a.catalogs.failing.FetchedAt = current.Source, current.FetchedAt
	}
	a.catalogs.mu.Unlock()

	a.metrics.recordRefresh(err == nil, current, now)
	took := time.Since(started).Round(time.Millisecond)
	if err != nil {
		a.log.Error("price refresh failed: runs plan with the last good catalog", "err", err, "took", took,
			"catalog", current.Source, "prices of", current.FetchedAt.Format(time.RFC3339), "written", cat != nil)
		return false
	}
	a.log.Info("prices refreshed", "catalog", current.Source, "offers", len(current.Offers), "prices of", current.FetchedAt.Format(time.RFC3339), "took", took)
	return true
}
