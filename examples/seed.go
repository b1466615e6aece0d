// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Seed makes a bare repository at origin whose main branch holds the files
// of src in one commit, made in a scratch work tree at seedDir that is
// removed afterwards. The demo and the tests start from such repositories.
// A Seed that fails removes the origin it made, so that nothing half made
// is taken for a repository later.
func Seed(origin, seedDir string, src fs.FS, message string) (err error) {
	defer os.RemoveAll(seedDir)
	if _, serr := os.Stat(origin); serr == nil {
		return fmt.Errorf("%s already exists", origin)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(origin)
		}
	}()
	if _, err := git.PlainInitWithOptions(origin, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}}); err != nil {
		return err
	}
	os.RemoveAll(seedDir)
	if err := os.CopyFS(seedDir, src); err != nil {
		return err
	}
	repo, err := git.PlainInitWithOptions(seedDir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		return err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return err
	}
	sig := &object.Signature{Name: "gpufleet", Email: "gpufleet@localhost", When: time.Now()}
	if _, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		return err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{origin}}); err != nil {
		return err
	}
	return repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}})
}
