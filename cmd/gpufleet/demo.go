// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/schema"
)

func (a *app) demoCommand() *cobra.Command {
	var dir, from string
	var reset bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Reconcile the example fleets against the embedded cloud emulator, in a scratch Git repository",
		Long: `demo shows gpufleet's main job on a machine with no cloud account. The
first time, it puts the example fleet repository into a scratch Git
repository under --dir; then it reconciles that repository against the
embedded emulator of AWS, Azure, GCP and Lambda Cloud, whose state it keeps beside it:
the plan, the actions, the status report and the commit. Run it again and
nothing changes; --reset starts over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := claimDemoDir(dir); err != nil {
				return err
			}
			if reset {
				if err := resetDemoDir(dir); err != nil {
					return err
				}
			}
			origin, err := filepath.Abs(filepath.Join(dir, "origin.git"))
			if err != nil {
				return err
			}
			if _, err := os.Stat(origin); errors.Is(err, fs.ErrNotExist) {
				src := fs.FS(examples.FleetRepo)
				if from != "" {
					if _, err := schema.Load(from); err != nil {
						return fmt.Errorf("--from %s: not a fleet repository gpufleet can load, %w", from, err)
					}
					// A checkout's own Git directory is not a fleet file.
					src = withoutGit{os.DirFS(from)}
				} else if src, err = fs.Sub(examples.FleetRepo, "fleet-repo"); err != nil {
					return err
				}
				if err := examples.Seed(origin, filepath.Join(dir, "seed"), src, "Example fleets"); err != nil {
					return fmt.Errorf("making the scratch repository, %w", err)
				}
				fmt.Fprintf(a.stdout, "Made a scratch Git repository of the example fleets: %s\n", origin)
			}
			if from == "" {
				a.demoSecrets()
			}
			work := filepath.Join(dir, "work")
			err = a.reconcile(cmd.Context(), runFlags{
				repo: "file://" + origin, workDir: work, output: "text",
				emulated: true, simState: filepath.Join(dir, "clouds.json"), parallelism: 16,
			}, true)
			if summary, rerr := os.ReadFile(filepath.Join(work, "status", "STATUS.md")); rerr == nil {
				fmt.Fprintf(a.stdout, "\n--- status/STATUS.md, as committed ---\n%s", summary)
			}
			fmt.Fprintf(a.stdout, "\nRun it again and nothing changes. See the history with: git --git-dir %s log --stat\n", origin)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".gpufleet/demo", "where the scratch repository and the emulator's state live")
	cmd.Flags().StringVar(&from, "from", "", "fleet repository directory to start from; the built-in example when empty")
	cmd.Flags().BoolVar(&reset, "reset", false, "start over: remove the scratch repository and the emulated clouds first")
	return cmd
}

// demoSecrets gives the example's secrets placeholder values where the
// environment has none, so the demo's nodes boot with something and the
// demo needs nothing set; the values never show in its output.
func (a *app) demoSecrets() {
	if set := examples.SetPlaceholderSecrets(schema.SecretEnvPrefix); len(set) > 0 {
		fmt.Fprintf(a.stdout, "Bootstrap secrets %s are demo placeholders; set %s<NAME> to use your own.\n", strings.Join(set, " and "), schema.SecretEnvPrefix)
	}
}

// demoMarker marks a directory the demo made, so that --reset removes what
// the demo put there and nothing a user keeps beside it.
const demoMarker = ".gpufleet-demo"

// demoEntries are what the demo writes in its directory.
var demoEntries = []string{"origin.git", "seed", "work", "clouds.json", demoMarker}

// claimDemoDir makes dir the demo's: it must be new, empty, or the demo's
// already.
func claimDemoDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, demoMarker)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	}
	for _, e := range entries {
		// A directory holding only what the demo writes is an older
		// demo's, made before the marker.
		if !slices.Contains(demoEntries, e.Name()) {
			return fmt.Errorf("%s holds %s and was not made by gpufleet demo: choose another --dir", dir, e.Name())
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, demoMarker), []byte("made by gpufleet demo\n"), 0o644)
}

// resetDemoDir removes what the demo made in dir, keeping its marker.
func resetDemoDir(dir string) error {
	for _, name := range demoEntries {
		if name == demoMarker {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// withoutGit is a directory's files without its .git, which a fleet
// repository checked out somewhere has and its copy must not.
type withoutGit struct{ fs.FS }

func (w withoutGit) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(w.FS, name)
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ".git" }), err
}
