// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufleet/gpufleet/reconcile"
)

func (a *app) unlockCommand() *cobra.Command {
	var f runFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "unlock",
		Short: "Free the repository lock of a reconciler that is no longer running",
		Long: `unlock frees the repository lock (refs/gpufleet/lock) that a reconciler
left behind when it died: a lock that has expired is freed at once; one
that has not is refused unless --force is given, since its holder may still
be applying. Only free a live lock when you know its holder is gone: two
reconcilers at once can launch nodes twice.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checkout, err := reconcile.Open(cmd.Context(), reconcile.SourceOptions{URL: f.repo, Branch: f.branch, WorkDir: cmp.Or(f.workDir, defaultWorkDir(f.repo))})
			if err != nil {
				return err
			}
			info, err := checkout.Unlock(cmd.Context(), force, time.Now())
			switch {
			case errors.Is(err, reconcile.ErrLockFree):
				fmt.Fprintln(a.stdout, "The repository lock is not held: nothing to do.")
				return nil
			case err != nil:
				return err
			}
			fmt.Fprintf(a.stdout, "Freed the repository lock held by %s (run %s, until %s).\n", info.Holder, info.Run, info.Until.UTC().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&f.repo, "repo", envOr("GPUFLEET_REPO", "."), "fleet repository: a URL or a local checkout [GPUFLEET_REPO]")
	cmd.Flags().StringVar(&f.branch, "branch", envOr("GPUFLEET_BRANCH", ""), "branch; the default branch when empty [GPUFLEET_BRANCH]")
	cmd.Flags().StringVar(&f.workDir, "workdir", envOr("GPUFLEET_WORKDIR", ""), "where remote repositories are cloned; .gpufleet/clones/<hash> when empty [GPUFLEET_WORKDIR]")
	cmd.Flags().BoolVar(&force, "force", false, "free the lock even though it has not expired")
	return cmd
}
