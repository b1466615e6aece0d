// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The image build leaves out what gpufleet writes in a checkout (its
// scratch directories, built binaries) and labels the image with what it
// is, its version, revision, source and licence, as OCI annotations.
func TestTheImageBuildSaysWhatItIs(t *testing.T) {
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(ignore), "\n")
	for _, want := range []string{".git", ".gpufleet/", "bin/", "dist/"} {
		found := false
		for _, l := range lines {
			found = found || strings.TrimSpace(l) == want
		}
		if !found {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"title", "version=\"${VERSION}\"", "revision=\"${REVISION}\"", "source", "licenses=\"Apache-2.0\""} {
		if !strings.Contains(string(dockerfile), "org.opencontainers.image."+label) {
			t.Errorf("the Dockerfile has no org.opencontainers.image.%s label", label)
		}
	}
	if !strings.Contains(string(dockerfile), "USER nonroot") {
		t.Error("the image does not run as a non-root user")
	}
	if licence, err := os.ReadFile("../../LICENSE"); err != nil || !strings.Contains(string(licence), "Apache License\n                           Version 2.0") {
		t.Errorf("LICENSE is not the Apache License 2.0 (%v)", err)
	}
}

// Every source file says its licence in an SPDX header in its first lines,
// where licence scanners look: the Go files, and the scripts and Dockerfile
// that build and test them.
func TestEverySourceFileSaysItsLicence(t *testing.T) {
	const header = "SPDX-License-Identifier: Apache-2.0"
	files := []string{"../../Dockerfile", "../../.ci/run", "../../.ci/release-check", "../../examples/github-action/install.sh"}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d files to check: is the walk in the right place?", len(files))
	}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		sc := bufio.NewScanner(f)
		for i := 0; i < 3 && sc.Scan(); i++ {
			found = found || strings.Contains(sc.Text(), header)
		}
		f.Close()
		if !found {
			t.Errorf("%s: no %q in its first three lines", strings.TrimPrefix(path, "../../"), header)
		}
	}
}
