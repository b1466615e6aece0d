// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The tests that run gpufleet as a process of its own share one build of
// it per set of build flags: linking the command takes about fourteen
// seconds of CPU, more than most of those tests spend running it. The
// builds live in a directory of the test binary's own, removed when its
// tests are done (see TestMain).

var builds struct {
	sync.Mutex
	dir string
	by  map[string]*build
}

// build is one `go build` of the command, made once.
type build struct {
	once sync.Once
	bin  string // where it is built, in a directory of its own
	err  error
}

// compileGpufleet is the command built with the go build flags given,
// short test run or not; each caller may run it but must not change it.
func compileGpufleet(t *testing.T, flags ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build gpufleet with")
	}
	builds.Lock()
	if builds.by == nil {
		builds.by = map[string]*build{}
	}
	key := strings.Join(flags, "\x00")
	b := builds.by[key]
	if builds.dir == "" {
		builds.dir, err = os.MkdirTemp("", "gpufleet-test-builds-")
	}
	if b == nil && err == nil {
		b = &build{bin: filepath.Join(builds.dir, fmt.Sprint(len(builds.by)), "gpufleet")}
		builds.by[key] = b
	}
	builds.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b.once.Do(func() {
		if err := os.Mkdir(filepath.Dir(b.bin), 0o755); err != nil {
			b.err = err
			return
		}
		if out, err := exec.Command(goTool, append(append([]string{"build", "-o", b.bin}, flags...), ".")...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building gpufleet, %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// removeBuilds removes what compileGpufleet built.
func removeBuilds() error {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir == "" {
		return nil
	}
	return os.RemoveAll(builds.dir)
}

// removingBuilds runs the tests, then removes the builds they shared.
type removingBuilds struct{ m *testing.M }

func (r removingBuilds) Run() int {
	code := r.m.Run()
	if err := removeBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the test builds of gpufleet:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
