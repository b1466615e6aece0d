// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gitIn returns a function that runs git in repo as a test user, failing
// the test on error; it skips the test where git is not installed.
func gitIn(t *testing.T, repo string) func(args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	return func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// exampleCheckout is a Git checkout of the example fleet repository in
// dir/repo, its files in one commit, with the git runner for it.
func exampleCheckout(t *testing.T, dir string) (string, func(args ...string)) {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	if err := os.CopyFS(repo, os.DirFS("../../examples/fleet-repo")); err != nil {
		t.Fatal(err)
	}
	git := gitIn(t, repo)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	return repo, git
}
