// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// release is a directory of releases as GitHub serves them, one directory
// per tag, each with its archives and checksums.txt.
type release struct {
	root string
}

// add publishes tag with an archive for this machine whose gpufleet prints
// says for `gpufleet version`, and a checksums.txt that lists sum for it,
// or the archive's own SHA-256 when sum is empty.
func (r release) add(t *testing.T, tag, says, sum string) {
	t.Helper()
	dir := filepath.Join(r.root, tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	binary := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = version ] && echo '%s'\n", says)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{{"LICENSE", "Apache-2.0\n"}, {"gpufleet", binary}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("gpufleet_%s_%s_%s.tar.gz", strings.TrimPrefix(tag, "v"), runtime.GOOS, runtime.GOARCH)
	if sum == "" {
		sum = fmt.Sprintf("%x", sha256.Sum256(buf.Bytes()))
	}
	installer, err := os.ReadFile("github-action/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	checksums := fmt.Sprintf("%s  %s\n%x  install.sh\n", sum, name, sha256.Sum256(installer))
	for file, body := range map[string][]byte{name: buf.Bytes(), "checksums.txt": []byte(checksums), "install.sh": installer} {
		if err := os.WriteFile(filepath.Join(dir, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("install.sh runs on Linux and macOS")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// The installer the action and the GitLab job share installs a release's
// binary only when its archive has the SHA-256 the release lists and the
// binary says it is that release, and names a version that does not exist.
func TestInstallShInstallsOnlyAVerifiedRelease(t *testing.T) {
	needTools(t, "bash", "curl", "tar")
	rel := release{root: t.TempDir()}
	rel.add(t, "v1.2.3", "gpufleet v1.2.3 (go1.26, revision 0123456789ab, price snapshot of 2026-12-01)", "")
	rel.add(t, "v1.2.4", "gpufleet v1.2.4 (go1.26)", strings.Repeat("0", 64))
	rel.add(t, "v1.2.5", "gpufleet v1.2.5+dirty (go1.26)", "")
	srv := httptest.NewServer(http.FileServer(http.Dir(rel.root)))
	defer srv.Close()

	tests := []struct {
		name, version string
		installs      bool
		says          string
	}{
		{"a release", "v1.2.3", true, "gpufleet v1.2.3 (go1.26"},
		{"a release named without its v", "1.2.3", true, "gpufleet v1.2.3 (go1.26"},
		{"a version that does not exist", "v9.9.9", false, "gpufleet v9.9.9 does not exist: there is no release v9.9.9 at " + srv.URL + "/v9.9.9"},
		{"an archive that is not the one the release lists", "v1.2.4", false, "but checksums.txt says 0000"},
		{"a binary that is not the release it says", "v1.2.5", false, "the binary of release v1.2.5 says it is: gpufleet v1.2.5+dirty"},
		{"not a version", "latest", false, `version "latest" is not a release version`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			cmd := exec.Command("bash", "github-action/install.sh", tt.version, dir)
			cmd.Env = append(os.Environ(), "GPUFLEET_RELEASES="+srv.URL)
			out, err := cmd.CombinedOutput()
			if tt.installs != (err == nil) {
				t.Fatalf("install.sh %s: %v\n%s", tt.version, err, out)
			}
			if !strings.Contains(string(out), tt.says) {
				t.Errorf("install.sh %s says\n%s\nwant %q in it", tt.version, out, tt.says)
			}
			_, statErr := os.Stat(filepath.Join(dir, "gpufleet"))
			if tt.installs != (statErr == nil) {
				t.Errorf("installed %v, want %v", statErr == nil, tt.installs)
			}
		})
	}

	// A file:// release directory serves as well as HTTP.
	dir := filepath.Join(t.TempDir(), "bin")
	cmd := exec.Command("bash", "github-action/install.sh", "v1.2.3", dir)
	cmd.Env = append(os.Environ(), "GPUFLEET_RELEASES=file://"+rel.root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install.sh from file://: %v\n%s", err, out)
	}
	cmd = exec.Command("bash", "github-action/install.sh", "v9.9.9", dir)
	cmd.Env = append(os.Environ(), "GPUFLEET_RELEASES=file://"+rel.root)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "gpufleet v9.9.9 does not exist") {
		t.Errorf("install.sh v9.9.9 from file://: %v\n%s", err, out)
	}
}

// The GitLab job's install lines, run as its script runs them: the release's
// installer puts the binary in the cached directory; a second pipeline
// finds it there and downloads nothing; a version that does not exist
// fails the job with its name.
func TestTheGitLabJobInstallsAndCachesARelease(t *testing.T) {
	needTools(t, "bash", "curl", "tar", "grep")
	raw, err := os.ReadFile("gitlab/gpufleet.gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]struct {
		Variables map[string]string `yaml:"variables"`
		Cache     struct {
			Key   string   `yaml:"key"`
			Paths []string `yaml:"paths"`
		} `yaml:"cache"`
		Script []string `yaml:"script"`
	}
	if err := yaml.Unmarshal(raw, &jobs); err != nil {
		t.Fatal(err)
	}
	job, ok := jobs["gpufleet-plan"]
	if !ok || len(job.Script) < 2 {
		t.Fatalf("no gpufleet-plan job with a script in the GitLab example")
	}
	// The lines up to the one that puts gpufleet on the PATH install it.
	var install []string
	for _, line := range job.Script {
		install = append(install, line)
		if strings.Contains(line, "PATH=") {
			break
		}
	}
	install = append(install, `gpufleet version`)
	if len(job.Cache.Paths) != 1 || !strings.Contains(strings.Join(install, "\n"), job.Cache.Paths[0]+"gpufleet") {
		t.Fatalf("the job caches %v, not the directory it installs gpufleet in", job.Cache.Paths)
	}
	if !strings.Contains(job.Cache.Key, "$GPUFLEET_VERSION") {
		t.Errorf("the cache key %q does not change with the version", job.Cache.Key)
	}

	def := job.Variables["GPUFLEET_VERSION"]
	rel := release{root: t.TempDir()}
	rel.add(t, def, "gpufleet "+def+" (go1.26)", "")
	var (
		mu       sync.Mutex
		requests []string
	)
	served := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(requests)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(rel.root)).ServeHTTP(w, r)
	}))
	defer srv.Close()

	project := t.TempDir()
	run := func(version string) (string, error) {
		cmd := exec.Command("bash", "-eo", "pipefail", "-c", strings.Join(install, "\n"))
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "GPUFLEET_VERSION="+version, "GPUFLEET_RELEASES="+srv.URL)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(def); err != nil {
		t.Fatalf("the job's default version %s: %v\n%s", def, err, out)
	}
	first := len(served())
	if first == 0 {
		t.Fatal("the first pipeline downloaded nothing")
	}
	out, err := run(def)
	if err != nil || !strings.Contains(out, "gpufleet "+def) {
		t.Fatalf("the second pipeline: %v\n%s", err, out)
	}
	if again := served()[first:]; len(again) != 0 {
		t.Errorf("the second pipeline downloaded %v again: the cached binary was not used", again)
	}
	out, err = run("v9.9.9")
	if err == nil || !strings.Contains(out, "gpufleet v9.9.9 does not exist") {
		t.Errorf("a version that does not exist: %v\n%s", err, out)
	}
}
