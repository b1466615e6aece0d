// SPDX-License-Identifier: Apache-2.0

//go:build unix

package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// The first SIGTERM asks gpufleet to wind down; a second one kills it
// then and there, whatever it was waiting for: here serve, in an hour's
// shutdown delay. The bound only tells a process that ignored the second
// signal from one that ended.
func TestASecondSIGTERMKills(t *testing.T) {
	t.Parallel()
	bin := buildGpufleet(t)
	env := testenv.NewOrigin(t, testenv.Example(t))
	cmd := exec.Command(bin, "serve", "--repo", "file://"+env.Origin, "--sim", "--sim-state", filepath.Join(env.Dir, "clouds.json"),
		"--listen", "127.0.0.1:0", "--workdir", filepath.Join(env.Dir, "work"), "--interval", "1h", "--shutdown-delay", "1h")
	cmd.Dir = env.Dir
	cmd.Env = crashBaseEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The log is read to its end, so that serve never blocks on it.
	serving, shuttingDown := make(chan struct{}), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.Contains(line, "msg=serving"):
				close(serving)
			case strings.Contains(line, `msg="shutting down"`):
				close(shuttingDown)
			}
		}
	}()
	await := func(logged chan struct{}, what string) {
		t.Helper()
		select {
		case <-logged:
		case <-time.After(time.Minute):
			t.Fatalf("serve did not log %s within a minute", what)
		}
	}
	await(serving, "that it serves")
	cmd.Process.Signal(syscall.SIGTERM)
	await(shuttingDown, "that it shuts down")

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		status, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !status.Signaled() || status.Signal() != syscall.SIGTERM {
			t.Errorf("serve ended with %v, want killed by the second SIGTERM", cmd.ProcessState)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve was still waiting out its shutdown delay a minute after the second SIGTERM")
	}
}
