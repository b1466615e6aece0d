package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of gpufleet and of its price snapshot",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(a.stdout, versionLine())
			return nil
		},
	}
}

// versionLine is what version and --version print.
func versionLine() string {
	return fmt.Sprintf("gpufleet %s (%s, price snapshot of %s)", buildVersion(), runtime.Version(), catalog.Default().FetchedAt.Format("2006-01-02"))
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}
