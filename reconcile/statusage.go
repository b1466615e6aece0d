// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/gpufleet/gpufleet/planner"
)

// ObservedFromStatus says how old the view of what runs is that a plan
// reads from the status files in repoDir's statusDir, as of now:
// observedAt is the status's own (status.Snapshot.ObservedAt), and the
// commit the last that wrote the directory, "" when repoDir is no Git
// checkout or never committed it. Nil when no fleet has a status. It
// reads no clock, so that the same checkout gives the same answer.
func ObservedFromStatus(repoDir, statusDir string, observedAt, now time.Time) *planner.ObservedState {
	if observedAt.IsZero() {
		return nil
	}
	return &planner.ObservedState{
		Source:     "status",
		ObservedAt: observedAt.UTC(),
		Commit:     lastCommitOf(repoDir, statusDir),
		AgeSeconds: max(0, int64(now.Sub(observedAt)/time.Second)),
	}
}

// lastCommitOf is the last commit, from the head back, that changed a
// file under dir, "" when none did or repoDir is no Git checkout.
func lastCommitOf(repoDir, dir string) string {
	repo, err := git.PlainOpenWithOptions(repoDir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	sub, err := insideWorktree(repo, repoDir)
	if err != nil {
		return ""
	}
	prefix := path.Join(sub, dir) + "/"
	head, err := repo.Head()
	if err != nil {
		return ""
	}
	commits, err := repo.Log(&git.LogOptions{From: head.Hash(), PathFilter: func(p string) bool { return strings.HasPrefix(p, prefix) }})
	if err != nil {
		return ""
	}
	defer commits.Close()
	var found string
	err = commits.ForEach(func(c *object.Commit) error {
		found = c.Hash.String()
		return storer.ErrStop
	})
	if err != nil {
		return ""
	}
	return found
}
