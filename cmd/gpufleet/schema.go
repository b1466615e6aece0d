// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
)

func (a *app) schemaCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the CUE schema of a fleet repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := a.stdout.Write(schema.Source())
			return err
		},
	}
	var repo string
	vendor := &cobra.Command{
		Use:   "vendor",
		Short: "Copy the schema into a repository's cue.mod so that `cue vet` can check it",
		Long: `vendor writes the schema to cue.mod/pkg/` + schema.ImportPath + `/ and, when the
repository has no cue.mod/module.cue yet, creates one. Files that import
"` + schema.ImportPath + `" can then be checked with the cue command itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			written, err := vendorSchema(repo)
			for _, name := range written {
				fmt.Fprintf(a.stdout, "wrote %s\n", name)
			}
			return err
		},
	}
	vendor.Flags().StringVar(&repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository directory [GPUFLEET_REPO]")
	cmd.AddCommand(vendor, a.schemaJSONCommand())
	return cmd
}

// moduleFile is what a fleet repository needs to be a CUE module; the
// module path is never published, so any valid one will do.
const moduleFile = `module: "fleets.gpufleet.local"
language: version: "v0.12.0"
`

func vendorSchema(repo string) ([]string, error) {
	var written []string
	modDir := filepath.Join(repo, "cue.mod")
	module := filepath.Join(modDir, "module.cue")
	if _, err := os.Stat(module); errors.Is(err, fs.ErrNotExist) {
		if err := atomicfile.Write(module, []byte(moduleFile)); err != nil {
			return written, err
		}
		written = append(written, module)
	} else if err != nil {
		return written, err
	}
	target := filepath.Join(modDir, "pkg", filepath.FromSlash(schema.ImportPath), "schema.cue")
	if err := atomicfile.Write(target, schema.Source()); err != nil {
		return written, err
	}
	return append(written, target), nil
}
