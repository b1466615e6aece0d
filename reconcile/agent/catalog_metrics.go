// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// catalogMetrics say how old the prices runs plan with are and how their
// refreshes go.
type catalogMetrics struct {
	refreshes   *prometheus.CounterVec
	failures    prometheus.Counter
	lastSuccess prometheus.Gauge
	age         prometheus.GaugeFunc
	// fetchedAt is the current catalog's FetchedAt, in Unix nanoseconds.
	fetchedAt atomic.Int64
}

func newCatalogMetrics() *catalogMetrics {
	m := &catalogMetrics{
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpufleet_catalog_refreshes_total",
			Help: "Refreshes of the price catalog by result: success (every cloud read, the catalog replaced) or failure (the runs kept the catalog they had).",
		}, []string{"result"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpufleet_catalog_refresh_failures_total",
			Help: "Refreshes of the price catalog that failed: a price API unreachable or answering errors, or a refreshed catalog that was invalid. Runs kept planning with the last good catalog.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpufleet_catalog_refresh_last_success_timestamp_seconds",
			Help: "When the price catalog was last refreshed without error, in seconds since the Unix epoch; 0 before the first.",
		}),
	}
	m.age = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gpufleet_catalog_age_seconds",
		Help: "How old the prices runs plan with are: seconds since the catalog's oldest part was fetched.",
	}, func() float64 {
		return max(0, time.Since(time.Unix(0, m.fetchedAt.Load())).Seconds())
	})
	// Both results from the first scrape, so that alerts on failures work
	// before the first one.
	m.refreshes.WithLabelValues(refreshSuccess)
	m.refreshes.WithLabelValues(refreshFailure)
	return m
}

const (
	refreshSuccess = "success"
	refreshFailure = "failure"
)

func (m *catalogMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.refreshes, m.failures, m.lastSuccess, m.age}
}

func (m *catalogMetrics) setCatalog(cat *catalog.Catalog) {
	m.fetchedAt.Store(cat.FetchedAt.UnixNano())
}

// recordRefresh counts a refresh and takes the age of the catalog runs
// plan with after it.
func (m *Metrics) recordRefresh(ok bool, current *catalog.Catalog, now time.Time) {
	m.catalog.setCatalog(current)
	if ok {
		m.catalog.refreshes.WithLabelValues(refreshSuccess).Inc()
		m.catalog.lastSuccess.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	m.catalog.refreshes.WithLabelValues(refreshFailure).Inc()
	m.catalog.failures.Inc()
}
