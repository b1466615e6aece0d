// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"bytes"
	"context"
	"path"
	"slices"

	"github.com/gpufleet/gpufleet/reconcile/render"
	"github.com/gpufleet/gpufleet/reconcile/status"
)

// finish builds the status of every fleet and, when committing, writes it
// and commits and pushes it if anything besides timestamps changed.
func (r *run) finish(ctx context.Context) error {
	if r.state == nil {
		// The run stopped before it read the state (no head to read).
		r.state = &status.RepoState{}
	}
	if r.quotas != nil {
		r.state.Quotas = r.quotasNow()
	}
	r.state.Prune(r.now)
	r.countRun()
	statuses := r.statuses()
	r.result.Statuses = statuses
	r.result.Blocklist = slices.Clone(r.state.Blocklist)
	if r.opts.DryRun || !r.opts.Commit {
		return nil
	}
	if r.lockLost() != nil {
		// Another reconciler holds the repository now; what it commits
		// is the status.
		r.log.Warn("the run lost the repository lock: its status is not committed")
		return nil
	}
	files := r.statusFiles(statuses)
	if len(files) == 0 {
		r.log.Info("status unchanged; nothing to commit")
		return nil
	}
	return r.commit(ctx, files)
}

// statusFiles renders the status files that differ from what the checkout
// holds in more than timestamps, keyed by repository-relative path.
func (r *run) statusFiles(statuses map[string]*status.FleetStatus) map[string][]byte {
	dir := r.statusDir()
	files := map[string][]byte{}
	changed := false
	for name, st := range statuses {
		if prev := r.previous[name]; prev != nil && status.SameBesidesTime(prev, st) {
			continue
		}
		changed = true
		files[path.Join(dir, name+".json")] = status.Encode(st)
	}
	// The loader refuses fleet names that are files gpufleet writes for
	// itself; a status computed from an older or foreign state must not
	// overwrite them either.
	for _, own := range []string{status.StateFile, status.SummaryFile} {
		delete(files, path.Join(dir, own))
	}
	unchanged := func(name string, data []byte) bool {
		if r.root == nil {
			return false
		}
		old, err := r.root.ReadFile(name)
		return err == nil && bytes.Equal(old, data)
	}
	state := status.Encode(r.state)
	if name := path.Join(dir, status.StateFile); !r.stateUnread && !unchanged(name, state) {
		changed = true
		files[name] = state
	}
	summary := render.StatusMarkdown(statuses, r.errs[""], render.Specs{Commit: r.specCommit(), Digest: r.specRevision(), StalePrices: r.stalePrices()})
	if name := path.Join(dir, status.SummaryFile); !unchanged(name, summary) {
		changed = true
		files[name] = summary
	}
	if !changed {
		return nil
	}
	return files
}

// countRun sums up what the run did, against the plan it ended with, for
// every output to say the same.
func (r *run) countRun() {
	r.result.FleetCounts = r.tally.counts(r.report)
	r.result.Counts = status.RunCounts{}
	for _, c := range r.result.FleetCounts {
		r.result.Counts = r.result.Counts.Add(c)
	}
}
