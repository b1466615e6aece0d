// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/schema"
)

// The specs of a commit are every file a load of it reads — gpufleet.cue,
// fleets/, policy/ and the bootstrap files they name — and a run applies
// them only as the commit holds them: a file the work tree has and the
// commit does not (untracked, or hidden by .gitignore), or holds otherwise,
// is refused by name. They are named by the Git hashes of those paths,
// which change when a spec or a bootstrap file does, and not when only the
// status does.

// specPaths are the paths whose Git entries name a repository's specs:
// the spec directories, so that a file added to them counts, and every
// file the load read, and where its symlinks led.
func specPaths(repo *schema.Repo) []string {
	paths := []string{schema.ConfigFile, schema.FleetsDir, schema.PolicyDir}
	if repo != nil {
		for _, f := range repo.Read {
			paths = append(paths, f.Name, f.Path())
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// specKey names a commit's specs by the Git hashes of their paths; a path
// the commit lacks counts as such.
func specKey(commit *object.Commit, paths []string) (string, error) {
	tree, err := commit.Tree()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, name := range paths {
		if e, err := tree.FindEntry(name); err == nil {
			fmt.Fprintf(&b, "%s %s\n", name, e.Hash)
		} else {
			fmt.Fprintf(&b, "%s -\n", name)
		}
	}
	return b.String(), nil
}

func specDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:16]
}

// specRevision digests the specs the run read at the head.
func (r *run) specRevision() string {
	commit, err := r.headCommit()
	if err != nil {
		return ""
	}
	key, err := specKey(commit, specPaths(r.repo))
	if err != nil {
		return ""
	}
	return specDigest(key)
}

// specCommitLimit bounds the walk back for the commit that made the specs
// what they are: status commits in between are many only when specs stay
// unchanged for long, and past the bound the oldest commit seen is named.
const specCommitLimit = 1000

// specCommit is the commit that made the specs what the head has: the
// oldest first-parent ancestor of the head with the same specs, walking no
// further than the first that differs. Status commits, which change only
// the status, do not move it, so it stays the same from run to run while
// the specs do.
func (r *run) specCommit() string {
	commit, err := r.headCommit()
	if err != nil {
		return ""
	}
	paths := specPaths(r.repo)
	want, err := specKey(commit, paths)
	if err != nil {
		return ""
	}
	for range specCommitLimit {
		if commit.NumParents() == 0 {
			break
		}
		parent, err := commit.Parent(0)
		if err != nil {
			break
		}
		if key, err := specKey(parent, paths); err != nil || key != want {
			break
		}
		commit = parent
	}
	return commit.Hash.String()
}

// checkCommitted refuses specs that are not what commit holds: every file
// the load read must be in the commit, as a regular file with what the
// load read in it.
func checkCommitted(commit *object.Commit, read []schema.ReadFile) error {
	tree, err := commit.Tree()
	if err != nil {
		return fmt.Errorf("reading commit %s, %w", shortHash(commit.Hash.String()), err)
	}
	var problems []string
	for _, f := range read {
		if _, err := tree.FindEntry(f.Name); err != nil {
			problems = append(problems, fmt.Sprintf("%s is not in it (untracked, or hidden by .gitignore)", f.Name))
			continue
		}
		blob, err := tree.File(f.Path())
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s leads to %s, which is not in it", f.Name, f.Path()))
		case blob.Mode != filemode.Regular && blob.Mode != filemode.Executable:
			problems = append(problems, fmt.Sprintf("%s is not a regular file in it", f.Path()))
		default:
			sum, err := blobSHA256(blob)
			if err != nil {
				return fmt.Errorf("reading %s at commit %s, %w", f.Path(), shortHash(commit.Hash.String()), err)
			}
			if sum != f.SHA256 {
				problems = append(problems, fmt.Sprintf("%s differs from it", f.Path()))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the specs read are not what commit %s holds: %s; gpufleet applies only what is committed: commit these files or remove them",
		shortHash(commit.Hash.String()), strings.Join(problems, "; "))
}

func blobSHA256(f *object.File) (string, error) {
	r, err := f.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
