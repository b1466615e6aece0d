// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
	"github.com/gpufleet/gpufleet/schema/atomicfile"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// commit writes files, commits them, and pushes; when the branch moved
// meanwhile, it syncs to the new head, writes the files again and retries.
// It never force-pushes.
func (r *run) commit(ctx context.Context, files map[string][]byte) error {
	msg := r.secrets.String(r.commitMessage(files))
	for attempt := 1; ; attempt++ {
		hash, err := r.writeAndCommit(files, msg)
		if err != nil {
			return err
		}
		r.result.Commit = hash
		if !r.c.Remote {
			return nil
		}
		if r.hooks.pushing() {
			return errCrashed
		}
		err = r.c.Repo.PushContext(ctx, &git.PushOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", r.c.Branch, r.c.Branch))},
			Auth:       r.c.auth,
		})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		if !isRejected(err) || attempt >= r.opts.PushAttempts {
			r.result.Commit = plumbing.ZeroHash
			return fmt.Errorf("pushing the status, %w", err)
		}
		r.log.Info("the branch moved; re-applying the status onto its new head", "attempt", attempt)
		if err := r.c.Sync(ctx); err != nil {
			return err
		}
	}
}

func (r *run) writeAndCommit(files map[string][]byte, msg string) (plumbing.Hash, error) {
	wt, err := r.c.Repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// Checked again on every attempt: the head a retry starts from may have
	// put a symlink where the status directory was.
	root, err := status.OpenRoot(r.c.Dir, r.statusDir())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer root.Close()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := atomicfile.WriteIn(root, filepath.FromSlash(name), r.secrets.Bytes(files[name])); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("writing %s, %w", name, err)
		}
		if _, err := wt.Add(name); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("staging %s, %w", name, err)
		}
	}
	name, email := cmp.Or(r.opts.AuthorName, "gpufleet"), cmp.Or(r.opts.AuthorEmail, "gpufleet@localhost")
	sig := &object.Signature{Name: name, Email: email, When: r.now}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("committing the status, %w", err)
	}
	return hash, nil
}

// commitMessage says what changed and the new hourly cost, and names the
// status files the run could not read: those it writes again, and those
// it leaves for a person.
func (r *run) commitMessage(files map[string][]byte) string {
	fleets := map[string]bool{}
	for _, a := range r.result.Applied {
		fleets[a.Fleet] = true
	}
	// Refused actions are counted with what was done: a commit that says
	// only what changed would read as converged.
	var refused []planner.Action
	if r.report != nil {
		refused = r.report.Changes.Refused
	}
	for _, a := range refused {
		fleets[a.Fleet] = true
	}
	// Deferred deletions are said too: the rollout is not over.
	var deferred []planner.Action
	if r.report != nil {
		deferred = r.report.Changes.Deferred
	}
	deferredCreates, deferredDeletes := planner.Changes{Deferred: deferred}.DeferredCounts()
	for _, a := range deferred {
		fleets[a.Fleet] = true
	}
	var b strings.Builder
	cost := int64(0)
	for _, st := range r.result.Statuses {
		cost += st.CostMicros
	}
	switch {
	case r.repo == nil || r.report == nil:
		b.WriteString("gpufleet: run stopped before planning")
	case len(r.result.Applied) > 0 || len(refused) > 0 || len(deferred) > 0:
		fmt.Fprintf(&b, "gpufleet: %s", r.result.Counts)
		if len(refused) > 0 {
			fmt.Fprintf(&b, ", %d refused", len(refused))
		}
		if deferredDeletes > 0 {
			fmt.Fprintf(&b, ", %s deferred", plural(deferredDeletes, "deletion"))
		}
		fmt.Fprintf(&b, " in %s; now %s/h", strings.Join(slices.Sorted(maps.Keys(fleets)), ", "), catalog.Money(cost))
	default:
		fmt.Fprintf(&b, "gpufleet: status update; now %s/h", catalog.Money(cost))
	}
	b.WriteString("\n\n")
	// A line per workload and offer: the status files list every node.
	b.WriteString(render.AppliedText(r.result.Applied, r.result.Counts))
	if len(refused) > 0 {
		fmt.Fprintf(&b, "refused: %s\n", r.report.Changes.Refusal)
	}
	if len(deferred) > 0 {
		fmt.Fprintf(&b, "deferred: %s and %s wait for later runs: %s\n", plural(deferredDeletes, "deletion"), plural(deferredCreates, "create"), r.report.Changes.Deferral)
	}
	for _, e := range r.errs[""] {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	for _, f := range r.unreadable {
		switch {
		case files[f.Path] != nil:
			fmt.Fprintf(&b, "rewritten: %s, which could not be read (%s)\n", f.Path, f.Problem)
		default:
			fmt.Fprintf(&b, "unreadable: %s (%s); no fleet of the specs writes it: fix it or delete it\n", f.Path, f.Problem)
		}
	}
	if r.result.Revision != "" {
		fmt.Fprintf(&b, "\nSpec-Commit: %s\n", r.result.Revision)
	}
	return b.String()
}
