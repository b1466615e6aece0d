// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// serve, sent a real SIGTERM while its first run waits on the clouds,
// cancels the run, which records its status and releases the lock, and
// exits 0.
func TestServeStopsCleanlyOnSIGTERM(t *testing.T) {
	const guard = 60 * time.Second
	// SIGTERM must not kill the test binary before serve's own handler is
	// in place: with a channel of ours registered, Go does not exit on it.
	held := make(chan os.Signal, 1)
	signal.Notify(held, syscall.SIGTERM)
	defer signal.Stop(held)

	env := testenv.NewOrigin(t, testenv.Example(t))
	dir, origin := env.Dir, env.Origin
	// The emulated clouds, kept in a file serve --sim loads, answer every
	// create only after an hour.
	state := filepath.Join(dir, "clouds.json")
	world, err := sim.New(sim.Config{Seed: 1, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []sim.Fault{{Cloud: "aws", Op: "RunInstances"}, {Cloud: "azure", Op: "put"}, {Cloud: "gcp", Op: "instances.insert"}, {Cloud: "gcp", Op: "instances.bulkInsert"}, {Cloud: "lambda", Op: "launch"}} {
		f.Kind, f.Rate, f.Latency = sim.FaultLatency, 1, sim.Duration(time.Hour)
		if err := world.AddFaults(&f); err != nil {
			t.Fatal(err)
		}
	}
	if err := world.Save(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUFLEET_WEBHOOK_SECRET", "never-in-a-log")

	logs, logWriter := io.Pipe()
	addr, applying := make(chan string, 1), make(chan struct{}, 1)
	var logText strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		serving := regexp.MustCompile(`msg=serving addr=(\S+)`)
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			line := sc.Text()
			logText.WriteString(line + "\n")
			// Never block here: serve would block on its next log line.
			if m := serving.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			if strings.Contains(line, "msg=step") && strings.Contains(line, "name=apply") {
				select {
				case applying <- struct{}{}:
				default:
				}
			}
		}
	}()
	exit := make(chan int, 1)
	go func() {
		exit <- Main([]string{"serve", "--repo", "file://" + origin, "--sim", "--sim-state", state,
			"--listen", "127.0.0.1:0", "--workdir", filepath.Join(dir, "work"), "--interval", "1h", "--log-level", "debug"},
			io.Discard, logWriter)
		logWriter.Close()
	}()

	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(guard):
		t.Fatal("serve did not start")
	}
	select {
	case <-applying:
	case <-time.After(guard):
		t.Fatal("the first run did not reach apply")
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s mid-run: %s", path, resp.Status)
		}
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0", code)
		}
	case <-time.After(guard):
		t.Fatal("serve did not stop on SIGTERM")
	}
	<-scanned
	text := logText.String()
	if !strings.Contains(text, "shutting down") || !strings.Contains(text, "msg=stopped") {
		t.Errorf("serve did not log its shutdown:\n%s", text)
	}
	if strings.Contains(text, "never-in-a-log") {
		t.Error("the webhook secret is in the log")
	}

	repo, err := git.PlainOpen(origin)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := repo.Reference("refs/gpufleet/lock", true)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := repo.CommitObject(lock.Hash()); err != nil || !strings.Contains(c.Message, "released-by:") {
		t.Errorf("the lock after SIGTERM: %v %q", err, c.Message)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := commit.Tree()
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = tree.Files().ForEach(func(f *object.File) error {
		if !strings.HasPrefix(f.Name, "status/") || !strings.HasSuffix(f.Name, ".json") {
			return nil
		}
		files++
		content, err := f.Contents()
		if err != nil {
			return err
		}
		if !json.Valid([]byte(content)) {
			t.Errorf("%s at the head is not valid JSON", f.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 && commit.Message != "Example fleets" {
		t.Errorf("the head moved without a status: %q", commit.Message)
	}
}
