// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// SourceOptions say where a fleet repository comes from and how to reach it.
type SourceOptions struct {
	// URL is a remote (https://, ssh://, git@host:path, git://, file://) or
	// a local directory.
	URL string
	// Branch to reconcile; empty means the remote's default branch, or the
	// checkout's current branch.
	Branch string
	// WorkDir is where a remote is cloned; it is reused on the next run.
	WorkDir string
	// Auth, when nil, is chosen from the environment for the URL's scheme:
	// GPUFLEET_GIT_TOKEN for HTTPS, GPUFLEET_GIT_SSH_KEY and
	// GPUFLEET_GIT_KNOWN_HOSTS for SSH, nothing for local paths.
	Auth transport.AuthMethod
}

// Checkout is a fleet repository on disk at a known revision.
type Checkout struct {
	Dir    string
	Repo   *git.Repository
	Branch plumbing.ReferenceName
	// Remote is false for a local directory reconciled in place: there is
	// nothing to fetch from or push to.
	Remote bool
	URL    string
	auth   transport.AuthMethod
	// gitMu keeps the lock's renewals apart from the run's own use of the
	// repository.
	gitMu sync.Mutex
}

// Head is the commit the checkout is at.
func (c *Checkout) Head() (plumbing.Hash, error) {
	ref, err := c.Repo.Reference(c.Branch, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading %s, %w", c.Branch, err)
	}
	return ref.Hash(), nil
}

// Open makes a checkout of the repository: a local directory is opened in
// place; a remote is cloned into WorkDir or, when gpufleet's own
// clone of it is already there, fetched and reset to the remote branch. A
// WorkDir holding anything else is refused and left as it is.
func Open(ctx context.Context, opts SourceOptions) (*Checkout, error) {
	if dir, ok := localDir(opts.URL); ok {
		return openLocal(dir, opts.Branch)
	}
	auth, err := authFor(opts)
	if err != nil {
		return nil, err
	}
	if opts.WorkDir == "" {
		return nil, errors.New("a remote repository needs a work directory to clone into")
	}
	state, err := inspectWorkDir(opts.WorkDir, opts.URL)
	if err != nil {
		return nil, err
	}
	// A full clone, not a shallow one: go-git reads a push onto a branch
	// that moved as a missing object, rather than a rejection, when the
	// history ends at a shallow boundary. Fleet repositories are small.
	clone := &git.CloneOptions{URL: opts.URL, Auth: auth, SingleBranch: true, Tags: git.NoTags}
	if opts.Branch != "" {
		clone.ReferenceName = plumbing.NewBranchReferenceName(opts.Branch)
	}
	if state == workDirOwnClone {
		c, err := reuseClone(ctx, opts, auth)
		if err == nil || ctx.Err() != nil {
			return c, err
		}
		// go-git rewrites refs and the index in place, so a run killed at
		// the wrong moment can leave an empty file that no later run gets
		// past. The clone is gpufleet's own: clone afresh and put the new
		// clone in its place, keeping the old one unless that succeeds
		// (the remote may be what failed).
		if _, cerr := cloneInto(ctx, opts.WorkDir, state, clone); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return reuseClone(ctx, opts, auth)
	}
	repo, err := cloneInto(ctx, opts.WorkDir, state, clone)
	if err != nil {
		return nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("reading the head of %s, %w", redact.URL(opts.URL), err)
	}
	return &Checkout{Dir: opts.WorkDir, Repo: repo, Branch: head.Name(), Remote: true, URL: opts.URL, auth: auth}, nil
}

// reuseClone opens gpufleet's own clone in the work directory and syncs it
// to the remote branch.
func reuseClone(ctx context.Context, opts SourceOptions, auth transport.AuthMethod) (*Checkout, error) {
	repo, err := git.PlainOpen(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("opening gpufleet's clone in %s, %w", opts.WorkDir, err)
	}
	c := &Checkout{Dir: opts.WorkDir, Repo: repo, Remote: true, URL: opts.URL, auth: auth}
	if err := c.sameRemote(); err != nil {
		return nil, err
	}
	if c.Branch, err = c.trackedBranch(opts.Branch); err != nil {
		return nil, err
	}
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// localDir reports whether a repository argument names a directory on disk
// rather than a remote.
func localDir(arg string) (string, bool) {
	if strings.Contains(arg, "://") {
		return "", false
	}
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		return arg, true
	}
	return "", false
}

func openLocal(dir, branch string) (*Checkout, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: false})
	if err != nil {
		return nil, fmt.Errorf("%s is not a Git repository (gpufleet commits its status there): %w", dir, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("%s has no commit to reconcile, %w", dir, err)
	}
	c := &Checkout{Dir: dir, Repo: repo, Branch: head.Name()}
	if branch != "" && head.Name() != plumbing.NewBranchReferenceName(branch) {
		return nil, fmt.Errorf("%s is on %s, not %s: check the branch out first", dir, head.Name().Short(), branch)
	}
	return c, nil
}

// checkClean refuses a local checkout with uncommitted changes to what
// gpufleet reads or writes: it reconciles commits, and records each run
// against the commit it read.
func (c *Checkout) checkClean() error {
	// Tracked files count anywhere; untracked ones where the loader would
	// read them as specs, or a run as an earlier status.
	watched := []string{schema.ConfigFile, schema.FleetsDir, schema.PolicyDir, "cue.mod", "status"}
	dirty, err := dirtyPaths(c.Repo, watched)
	if err != nil {
		return err
	}
	if len(dirty) == 0 {
		return nil
	}
	slices.Sort(dirty)
	shown := dirty
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(dirty)-5))
	}
	return fmt.Errorf("%s has uncommitted changes (%s): gpufleet reconciles what is committed, and records each run against that commit; commit or stash them first (`gpufleet plan --repo %s` previews uncommitted specs)",
		c.Dir, strings.Join(shown, ", "), c.Dir)
}

// sameRemote refuses a work directory cloned from another repository.
func (c *Checkout) sameRemote() error {
	remote, err := c.Repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return fmt.Errorf("work directory %s has no origin: remove it to clone afresh", c.Dir)
	}
	if urls := remote.Config().URLs; len(urls) == 0 || urls[0] != c.URL {
		return fmt.Errorf("work directory %s holds a clone of another repository: remove it or choose another", c.Dir)
	}
	return nil
}

func (c *Checkout) trackedBranch(branch string) (plumbing.ReferenceName, error) {
	if branch != "" {
		return plumbing.NewBranchReferenceName(branch), nil
	}
	head, err := c.Repo.Head()
	if err != nil {
		return "", fmt.Errorf("reading the work directory's branch, %w", err)
	}
	return head.Name(), nil
}

// Sync fetches the remote branch and resets the work tree to it. The work
// directory is gpufleet's own: anything left there by a run that failed to
// push is recomputed by the next one.
func (c *Checkout) Sync(ctx context.Context) error {
	if !c.Remote {
		return nil
	}
	remoteRef := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, c.Branch.Short())
	err := c.Repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", c.Branch, remoteRef))},
		Auth:       c.auth,
		Force:      true,
		Tags:       git.NoTags,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching %s, %w", redact.URL(c.URL), err)
	}
	ref, err := c.Repo.Reference(remoteRef, true)
	if err != nil {
		return fmt.Errorf("reading %s, %w", remoteRef, err)
	}
	wt, err := c.Repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: c.Branch, Force: true, Create: false}); err != nil {
		if cerr := wt.Checkout(&git.CheckoutOptions{Branch: c.Branch, Hash: ref.Hash(), Force: true, Create: true}); cerr != nil {
			return fmt.Errorf("checking out %s, %w", c.Branch.Short(), errors.Join(err, cerr))
		}
	}
	if err := wt.Reset(&git.ResetOptions{Commit: ref.Hash(), Mode: git.HardReset}); err != nil {
		return fmt.Errorf("resetting to %s, %w", ref.Hash(), err)
	}
	return nil
}

// authFor picks credentials for a URL from the options or the environment.
func authFor(opts SourceOptions) (transport.AuthMethod, error) {
	if opts.Auth != nil {
		return opts.Auth, nil
	}
	ep, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("repository %q, %w", redact.URL(opts.URL), err)
	}
	switch ep.Protocol {
	case "https", "http":
		if token := os.Getenv("GPUFLEET_GIT_TOKEN"); token != "" {
			if ep.Protocol == "http" && os.Getenv("GPUFLEET_GIT_ALLOW_HTTP") != "true" {
				return nil, fmt.Errorf("refusing to send GPUFLEET_GIT_TOKEN to %s in clear text: use an https:// URL, or set GPUFLEET_GIT_ALLOW_HTTP=true on a network you trust", redact.URL(opts.URL))
			}
			// GitHub, GitLab and Gitea all take a token as the password
			// with any user name.
			return &githttp.BasicAuth{Username: "x-access-token", Password: token}, nil
		}
		return nil, nil
	case "ssh":
		return sshAuth(ep.User)
	}
	return nil, nil
}

// sshAuth loads the key in GPUFLEET_GIT_SSH_KEY (a file) and checks hosts
// against GPUFLEET_GIT_KNOWN_HOSTS or ~/.ssh/known_hosts: a host key that is
// not known is refused, never trusted on first use.
func sshAuth(user string) (transport.AuthMethod, error) {
	keyFile := os.Getenv("GPUFLEET_GIT_SSH_KEY")
	if keyFile == "" {
		home, _ := os.UserHomeDir()
		keyFile = filepath.Join(home, ".ssh", "id_ed25519")
	}
	if user == "" {
		user = "git"
	}
	auth, err := gitssh.NewPublicKeysFromFile(user, keyFile, os.Getenv("GPUFLEET_GIT_SSH_KEY_PASSPHRASE"))
	if err != nil {
		return nil, fmt.Errorf("loading the SSH key %s (set GPUFLEET_GIT_SSH_KEY), %w", keyFile, err)
	}
	knownHosts := os.Getenv("GPUFLEET_GIT_KNOWN_HOSTS")
	var files []string
	if knownHosts != "" {
		files = []string{knownHosts}
	}
	callback, err := gitssh.NewKnownHostsCallback(files...)
	if err != nil {
		return nil, fmt.Errorf("loading known hosts (set GPUFLEET_GIT_KNOWN_HOSTS), %w", err)
	}
	auth.HostKeyCallback = func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := callback(host, remote, key); err != nil {
			return fmt.Errorf("refusing %s: its host key is not in known_hosts (%w)", host, err)
		}
		return nil
	}
	return auth, nil
}

// Export writes the files of a revision of the repository at dir into dst,
// for planning another revision than the one checked out (a pull request's
// base). dir may be a directory inside the repository (a monorepo's fleet
// repository): what is exported is that directory as the revision has it,
// so dst holds what dir would hold; a revision without the directory
// exports nothing. Only regular files are written, and no path may leave
// dst.
func Export(dir, rev, dst string) error {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return fmt.Errorf("%s is not a Git repository, %w", dir, err)
	}
	sub, err := insideWorktree(repo, dir)
	if err != nil {
		return err
	}
	hash, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return fmt.Errorf("resolving %q (is the base fetched? a shallow checkout lacks it), %w", rev, err)
	}
	commit, err := repo.CommitObject(*hash)
	if err != nil {
		return err
	}
	tree, err := commit.Tree()
	if err != nil {
		return err
	}
	if sub != "" {
		tree, err = tree.Tree(sub)
		if errors.Is(err, object.ErrDirectoryNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s at %s, %w", sub, rev, err)
		}
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	return tree.Files().ForEach(func(f *object.File) error {
		if !f.Mode.IsFile() {
			return nil
		}
		content, err := f.Contents()
		if err != nil {
			return err
		}
		if d := filepath.Dir(f.Name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		return root.WriteFile(f.Name, []byte(content), 0o644)
	})
}

// insideWorktree is where dir lies in repo's work tree, slash-separated,
// "" for the top.
func insideWorktree(repo *git.Repository, dir string) (string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("%s has no work tree, %w", dir, err)
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside the work tree %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// Commits resolves a pull request's base revision and the checkout's head
// in the repository holding dir, for a review to name them; what does not
// resolve is "".
func Commits(dir, base string) (baseCommit, headCommit string) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", ""
	}
	if h, err := repo.ResolveRevision(plumbing.Revision(base)); err == nil {
		baseCommit = h.String()
	}
	if h, err := repo.Head(); err == nil {
		headCommit = h.Hash().String()
	}
	return baseCommit, headCommit
}
