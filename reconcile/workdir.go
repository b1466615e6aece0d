// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"

	"github.com/gpufleet/gpufleet/schema/redact"
)

// A work directory is where gpufleet keeps its clone of a remote fleet
// repository. gpufleet resets that clone to the remote branch on every
// run, so it must never mistake someone else's directory for its own: it
// clones only into a directory that is absent or empty, marks each clone it
// makes, reuses only a marked clone of the same URL, and removes nothing
// but the scratch directories it made itself.

// cloneMarker, inside a clone's .git directory, says that gpufleet made the
// clone and from which URL. Being inside .git, it is never part of the
// work tree or of a commit.
const cloneMarker = "gpufleet-clone"

// scratchPrefix names the scratch directories a clone is made in before it
// moves into place. A crash can leave one behind; the next clone removes
// it, since no one else makes directories of that name.
const scratchPrefix = ".gpufleet-scratch-"

// ErrForeignWorkDir says a work directory holds something gpufleet did not
// make; it is left untouched.
var ErrForeignWorkDir = errors.New("the work directory is not gpufleet's")

type workDirState int

const (
	workDirAbsent workDirState = iota
	workDirEmpty
	workDirOwnClone
)

// inspectWorkDir says whether dir can take a new clone, holds gpufleet's
// clone of url, or must be left alone (an error wrapping ErrForeignWorkDir).
func inspectWorkDir(dir, url string) (workDirState, error) {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return workDirAbsent, nil
	case err != nil:
		return 0, fmt.Errorf("reading the work directory %s, %w", dir, err)
	case !info.IsDir():
		return 0, fmt.Errorf("work directory %s is a file: %w", dir, ErrForeignWorkDir)
	}
	marked, err := os.ReadFile(filepath.Join(dir, git.GitDirName, cloneMarker))
	if err == nil {
		if got := strings.TrimSpace(string(marked)); got != url {
			return 0, fmt.Errorf("work directory %s holds gpufleet's clone of %s, not of %s: choose another --workdir, or remove it: %w",
				dir, redact.URL(got), redact.URL(url), ErrForeignWorkDir)
		}
		return workDirOwnClone, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("reading the work directory %s, %w", dir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), scratchPrefix) {
			return 0, fmt.Errorf("work directory %s is not empty and is not a clone gpufleet made (it found %s there): gpufleet clones only into an empty or new directory and never resets one it did not make; choose another --workdir: %w",
				dir, e.Name(), ErrForeignWorkDir)
		}
	}
	return workDirEmpty, nil
}

// cloneInto clones url into dir, which is absent or empty. The clone is
// made in a scratch directory and moved into place once it is complete and
// marked, so a failed or interrupted clone leaves dir as it was.
func cloneInto(ctx context.Context, dir string, state workDirState, clone *git.CloneOptions) (*git.Repository, error) {
	// The scratch directory sits beside dir when dir does not exist yet,
	// and inside it otherwise (dir may be a mount point, whose parent is
	// not ours to write).
	parent, prefix := dir, scratchPrefix
	if state == workDirAbsent {
		parent, prefix = filepath.Dir(dir), scratchPrefix+filepath.Base(dir)+"-"
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("making %s, %w", parent, err)
		}
	}
	removeScratch(parent, prefix)
	scratch, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, fmt.Errorf("making a scratch directory for the clone, %w", err)
	}
	// From here on, everything under scratch is gpufleet's.
	defer os.RemoveAll(scratch)
	if _, err := git.PlainCloneContext(ctx, scratch, false, clone); err != nil {
		return nil, fmt.Errorf("cloning %s, %w", redact.URL(clone.URL), err)
	}
	if err := os.WriteFile(filepath.Join(scratch, git.GitDirName, cloneMarker), []byte(clone.URL+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("marking the clone, %w", err)
	}
	switch state {
	case workDirAbsent:
		if err := os.Rename(scratch, dir); err != nil {
			return nil, fmt.Errorf("moving the clone into %s, %w", dir, err)
		}
	case workDirOwnClone:
		if err := clearClone(dir); err != nil {
			return nil, err
		}
		fallthrough
	default:
		if err := moveEntries(scratch, dir); err != nil {
			return nil, err
		}
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the clone in %s, %w", dir, err)
	}
	return repo, nil
}

// moveEntries moves a finished clone's entries into a directory emptied
// for it, .git first: should the move be cut short, the directory is
// already a marked clone, whose next sync restores the missing files.
func moveEntries(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	slices.SortStableFunc(entries, func(a, b fs.DirEntry) int {
		return cmp.Compare(boolRank(a.Name() != git.GitDirName), boolRank(b.Name() != git.GitDirName))
	})
	for _, e := range entries {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return fmt.Errorf("moving the clone into %s, %w", to, err)
		}
	}
	return nil
}

// clearClone removes gpufleet's own clone from dir, keeping dir and any
// scratch directory in it, .git last: until then the directory is still a
// marked clone, and after it, empty.
func clearClone(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	slices.SortStableFunc(entries, func(a, b fs.DirEntry) int {
		return cmp.Compare(boolRank(a.Name() == git.GitDirName), boolRank(b.Name() == git.GitDirName))
	})
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), scratchPrefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("replacing the clone in %s, %w", dir, err)
		}
	}
	return nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// removeScratch removes scratch directories an interrupted clone left in
// dir.
func removeScratch(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// dirtyPaths lists what a local checkout has that is not committed:
// modified or staged files, and files not yet tracked where gpufleet reads
// specs or writes status. gpufleet reconciles commits, so that what it
// applies and what it records against a commit are the same thing.
func dirtyPaths(repo *git.Repository, watched []string) ([]string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	changes, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("reading the status of the work tree, %w", err)
	}
	var out []string
	for path, st := range changes {
		switch {
		case st.Staging == git.Untracked || st.Worktree == git.Untracked:
			if underAny(path, watched) {
				out = append(out, path+" (untracked)")
			}
		case st.Staging != git.Unmodified:
			out = append(out, path+" (staged)")
		case st.Worktree != git.Unmodified:
			out = append(out, path+" (modified)")
		}
	}
	return out, nil
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}
