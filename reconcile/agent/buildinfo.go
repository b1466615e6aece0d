// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"cmp"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is the version the command line reports, set before the agent
// starts; when empty, the module version of the build info is used.
var Version string

// buildInfo is gpufleet_build_info: always 1, with the version, the VCS
// revision and the Go version as labels, so a dashboard can join any
// series on what produced it and see a rollout of a new release.
func buildInfo() prometheus.Collector {
	version, revision := cmp.Or(Version, "devel"), "unknown"
	goVersion := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		if v := info.Main.Version; Version == "" && v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "gpufleet_build_info",
		Help:        "Always 1: the version, VCS revision and Go version of the running gpufleet as labels.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	return g
}
