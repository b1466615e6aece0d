// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func (a *app) versionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of gpufleet and of its price snapshot",
		Long: `version prints the version gpufleet was built as (the release's, or the
module version Go derives from the VCS), the VCS revision, whether the tree
it was built from had changes not committed ("+dirty"), the Go version and
the date of the embedded price snapshot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outputFormat(output, "text", "json"); err != nil {
				return err
			}
			if output == "json" {
				return a.writeOutput("version", readBuild())
			}
			fmt.Fprintln(a.stdout, versionLine())
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// buildInfo is what a binary knows of how it was built.
type buildInfo struct {
	// Version is the release's version, else the module version Go stamps
	// from the VCS, else "devel"; "+dirty" ends it when the tree had
	// changes not committed.
	Version string `json:"version"`
	// Revision is the VCS commit, empty when the build had none.
	Revision string `json:"revision,omitempty"`
	// Dirty says the tree had changes not committed.
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"goVersion"`
	// PriceSnapshot is the date the embedded prices were read.
	PriceSnapshot string `json:"priceSnapshot"`
}

func readBuild() buildInfo {
	info, ok := debug.ReadBuildInfo()
	return buildOf(version, info, ok)
}

// buildOf is the build of a binary whose -ldflags version is release and
// whose build info is info (ok false when it has none).
func buildOf(release string, info *debug.BuildInfo, ok bool) buildInfo {
	b := buildInfo{Version: release, GoVersion: runtime.Version(), PriceSnapshot: catalog.SnapshotFetchedAt().Format("2006-01-02")}
	if ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Dirty = s.Value == "true"
			}
		}
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	// A release built from a tree with changes is not that release.
	if b.Dirty && !strings.HasSuffix(b.Version, "+dirty") {
		b.Version += "+dirty"
	}
	return b
}

// versionLine is what version and --version print.
func versionLine() string {
	b := readBuild()
	rev := ""
	if b.Revision != "" {
		rev = ", revision " + b.Revision[:min(12, len(b.Revision))]
	}
	return fmt.Sprintf("gpufleet %s (%s%s, price snapshot of %s)", b.Version, b.GoVersion, rev, b.PriceSnapshot)
}

func buildVersion() string { return readBuild().Version }
