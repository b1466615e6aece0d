// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// notifyBound is the most a run may spend telling of itself in the sweep
// below, GPUFLEET_NOTIFY_TIMEOUT; hangBound tells a run that ends late from
// one that never ends, and decides nothing about speed.
const (
	notifyBound = 600 * time.Millisecond
	hangBound   = time.Minute
)

// TestKillsWhileTheReceiverHangs kills real `gpufleet reconcile` processes,
// with SIGTERM or SIGKILL at random moments, while gpufleet.cue sends their
// notifications, Slack's and a signed webhook's, to a receiver on loopback
// that accepts every delivery and never answers. Before every run the
// fleets change, so every run has nodes to create and delete and something
// to tell. Then:
//
//   - a run sent SIGTERM ends promptly, with the lock released and, unless
//     it was done before the signal came (it had nothing to tell, or its
//     notifications had given up), a non-zero exit status;
//   - a run sent SIGKILL may leave the lock behind, which an operator frees
//     (`gpufleet unlock --force`), and the next run goes on from it;
//   - a run nobody kills ends within GPUFLEET_NOTIFY_TIMEOUT of its work;
//   - at the end, one run converges and the next has nothing to do or
//     tell; no create token made two nodes, every node is in the status,
//     and the lock is free.
//
// GPUFLEET_NOTIFY_KILLS sets the number of kills (20). Only where the kills
// land depends on timing; the verdict must not. -short skips it.
func TestKillsWhileTheReceiverHangs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill sweep of real gpufleet processes; run without -short")
	}
	kills := crashEnvInt(t, "GPUFLEET_NOTIFY_KILLS", 20)
	began := time.Now()
	r := rand.New(rand.NewPCG(2026, 0x6e6f74696679))

	hang := newHangingReceiver(t)
	sizes := []int{4, 2, 5, 3, 6, 1}
	nodes := sizes[0]
	env := testenv.NewOrigin(t, notifyRepo(nodes))
	// Every change of the fleets is to another size.
	change := func(r *rand.Rand) {
		next := nodes
		for next == nodes {
			next = sizes[r.IntN(len(sizes))]
		}
		nodes = next
		env.Push("fleets/big.cue", batchFleet(nodes), fmt.Sprintf("%d nodes each", nodes))
	}
	s := &crashSweep{t: t, bin: compileGpufleet(t), dir: env.Dir, origin: env.Origin, url: env.URL, state: filepath.Join(env.Dir, "clouds.json"),
		seed: 2026, exits: map[string]int{}, failedVMs: map[string]bool{}}
	if err := os.Mkdir(filepath.Join(s.dir, "cwd"), 0o755); err != nil {
		t.Fatal(err)
	}
	noFaults := filepath.Join(s.dir, "no-faults.json")
	if err := os.WriteFile(noFaults, []byte(`{"faults": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.sim = s.startSim(noFaults)
	defer s.sim.interrupt(t)
	k := &killer{crashSweep: s, receiver: hang, env: []string{
		"TEST_SLACK_URL=" + hang.url + "/slack",
		"TEST_HOOK_URL=" + hang.url + "/hook",
		"TEST_HOOK_KEY=k3y-for-the-sweep",
		notify.TimeoutEnv + "=" + notifyBound.String(),
	}}
	work := filepath.Join(s.dir, "work")

	// Two runs nobody kills: the first creates every node, the next is a
	// change of the fleets like those the kills strike in. How long they
	// take, their notifications' wait included, spreads the kills.
	first := k.run(work, 0, 0)
	k.checkUnkilled(first, "the first run")
	change(r)
	measured := k.run(work, 0, 0)
	k.checkUnkilled(measured, "the second run")
	typical := measured.took
	t.Logf("unkilled runs took %v (exit %d) and %v (exit %d), a notification wait of %v included",
		first.took.Round(time.Millisecond), first.exit, measured.took.Round(time.Millisecond), measured.exit, notifyBound)

	landed := map[string]int{}
	freed := 0
	strata := r.Perm(kills)
	for i := range kills {
		change(r)
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		// Each kill strikes in its own slice of a typical run, the slices in
		// a random order, so that some land in the work and some in the
		// wait for the receiver.
		delay := max(1, time.Duration((float64(strata[i])+r.Float64())/float64(kills)*float64(typical)))
		run := k.run(work, delay, sig)
		at := k.landing(run)
		landed[fmt.Sprintf("%v %s", sig, at)]++
		t.Logf("kill %2d: %v at %6v of ~%6v: %s; ended %v after it", i+1, sig, delay.Round(time.Millisecond), typical.Round(time.Millisecond), at, run.afterSignal.Round(time.Millisecond))
		switch {
		case !run.signalled:
			k.checkUnkilled(run, fmt.Sprintf("run %d, which finished before its %v", i+1, sig))
		case sig == syscall.SIGTERM:
			k.checkTerminated(run, i+1)
		}
		if sig == syscall.SIGKILL && s.unlock(work) {
			freed++
		}
	}

	// After the last kill, no change of the fleets and no kill: the run
	// converges, and the next, with nothing to do, tells no one.
	last := k.run(work, 0, 0)
	k.checkUnkilled(last, "the converging run")
	if last.exit != exitConverged {
		t.Errorf("the converging run exited %d; stderr:\n%s", last.exit, lastLines(last.stderr, 20))
	}
	idle := k.run(work, 0, 0)
	k.checkUnkilled(idle, "the run with nothing to do")
	if idle.exit != exitConverged {
		t.Errorf("the run with nothing to do exited %d; stderr:\n%s", idle.exit, lastLines(idle.stderr, 20))
	}
	if idle.count("telling of the run") != 0 {
		t.Errorf("a run with nothing to do told of itself; stderr:\n%s", lastLines(idle.stderr, 10))
	}

	instances := s.world().Instances()
	duplicates := crashDuplicates(t, instances)
	byToken := map[string]int{}
	for _, inst := range instances {
		byToken[testenv.NodeToken(inst)]++
	}
	for token, n := range byToken {
		if n > 1 {
			t.Errorf("token %q launched %d instances over the sweep", token, n)
		}
	}
	leaked, live := s.checkAccounted(instances)
	s.checkFsck()
	if holder, held := s.lockHeld(); held {
		t.Errorf("the repository lock is still held at the end, by %s", holder)
	}
	t.Logf("notification kill sweep: %d kills; landed: %v; exit codes: %v; locks freed after SIGKILL: %d; deliveries the receiver held: %d; "+
		"duplicates: %d; leaked: %d; %d live instances; took %v",
		kills, landed, s.exits, freed, hang.count(), duplicates, leaked, live, time.Since(began).Round(time.Millisecond))
}

// notifyRepo is a fleet repository of nodes on EC2 and GCE, n of each,
// whose gpufleet.cue tells Slack and a webhook, from the environment, of
// every run.
func notifyRepo(n int) fstest.MapFS {
	return fstest.MapFS{
		"gpufleet.cue": {Data: []byte(`package gpufleet

gpufleet: clouds: {
	aws: regions: ["us-east-1"]
	gcp: {project: "acme-gpu-fleet", regions: ["us-central1"]}
}
gpufleet: defaults: maxDeletions: 1000
gpufleet: notifications: {
	slack: urlEnv: "TEST_SLACK_URL"
	webhook: {urlEnv: "TEST_HOOK_URL", secretEnv: "TEST_HOOK_KEY"}
}
`)},
		"fleets/big.cue": {Data: []byte(batchFleet(n))},
	}
}

// hangingReceiver takes every delivery, reads it, and never answers while
// its client waits.
type hangingReceiver struct {
	url  string
	mu   sync.Mutex
	seen int
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	t.Helper()
	h := &hangingReceiver{}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client that goes away only once it has read
		// the body.
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.seen++
		h.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	h.url = srv.URL
	return h
}

func (h *hangingReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen
}

// killer runs gpufleet with the receiver's environment and kills it with
// the signal it is told.
type killer struct {
	*crashSweep
	receiver *hangingReceiver
	env      []string
}

// killedRun is how one run went.
type killedRun struct {
	crashRun
	// signalled says the signal was sent before the process was seen to
	// end; afterSignal is how long it lived after.
	signalled   bool
	afterSignal time.Duration
	sig         syscall.Signal
	// toldFirst says the receiver held a delivery of the run's when the
	// signal was sent.
	toldFirst bool
}

// run runs `gpufleet reconcile` in workDir and, when sig is not zero,
// sends it sig that long after it started unless it ended first. A run
// that outlives hangBound after its start, or after the signal, is killed
// and fails the test.
func (k *killer) run(workDir string, after time.Duration, sig syscall.Signal) killedRun {
	t := k.t
	t.Helper()
	k.runs++
	base := filepath.Join(k.dir, "logs", fmt.Sprintf("%03d-reconcile", k.runs))
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, err := os.Create(base + ".stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(base + ".stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(k.bin, "reconcile", "--repo", k.url, "--workdir", workDir, "--log-format", "json", "--log-level", "debug")
	cmd.Dir = filepath.Join(k.dir, "cwd")
	cmd.Env = append(append(crashBaseEnv(), k.sim.env...), k.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	run := killedRun{sig: sig}
	told := k.receiver.count()
	hung := func(what string) {
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		k.awaitGroup(cmd.Process.Pid)
		t.Fatalf("gpufleet reconcile was still running %v %s; stderr:\n%s", hangBound, what, lastLines(readFileText(stderr.Name()), 20))
	}
	if sig != 0 {
		select {
		case <-done:
		case <-time.After(after):
			signalled := time.Now()
			run.toldFirst = k.receiver.count() > told
			cmd.Process.Signal(sig)
			run.signalled = true
			select {
			case <-done:
			case <-time.After(hangBound):
				hung("after " + sig.String())
			}
			run.afterSignal = time.Since(signalled)
		}
	}
	select {
	case <-done:
	case <-time.After(hangBound):
		hung("after it started")
	}
	run.took = time.Since(start)
	run.exit = cmd.ProcessState.ExitCode()
	status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	run.killed = status.Signaled()
	if run.killed {
		k.exits[status.Signal().String()]++
	} else {
		k.exits[fmt.Sprint(run.exit)]++
	}
	// A killed run's Git children stand for the Git server, which goes on.
	k.awaitGroup(cmd.Process.Pid)
	run.stdout, run.stderr = readFileText(stdout.Name()), readFileText(stderr.Name())
	for _, line := range strings.Split(run.stderr, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil {
			run.logs = append(run.logs, entry)
		}
	}
	return run
}

// told is the outcome of a run's notifications, from its log: "" when it
// logged none.
func (r killedRun) told() string {
	for _, l := range r.logs {
		if l["msg"] == "could not tell of the run" {
			s, _ := l["err"].(string)
			return s
		}
	}
	return ""
}

// landing names where a signal struck, from what the run logged.
func (k *killer) landing(run killedRun) string {
	switch {
	case !run.signalled:
		return "finished first"
	case run.toldFirst:
		return "while it told of itself"
	}
	step := "clone, lock or sync"
	for _, l := range run.logs {
		if l["msg"] == "step" {
			step, _ = l["name"].(string)
		}
	}
	return step
}

// checkUnkilled checks a run that ended on its own: within the bound, and
// having told of itself, if it had anything to tell, for no longer than
// GPUFLEET_NOTIFY_TIMEOUT, which a receiver that never answers uses up.
func (k *killer) checkUnkilled(run killedRun, what string) {
	t := k.t
	t.Helper()
	if run.exit == exitError {
		t.Errorf("%s failed: %s", what, lastLines(run.stderr, 5))
	}
	if told := run.told(); told != "" && !strings.Contains(told, "no answer within "+notify.TimeoutEnv) {
		t.Errorf("%s: its notifications ended with %q, want them given up at %s", what, told, notify.TimeoutEnv)
	}
	if holder, held := k.lockHeld(); held {
		t.Errorf("%s left the lock held by %s", what, holder)
	}
}

// checkTerminated checks a run sent SIGTERM: it ended by itself, not by
// the signal's default action (which only a process too young to have
// logged anything may die of), released the lock, and exited non-zero
// unless it was done, telling of itself included, when the signal came:
// it had nothing to tell, or its notifications had given up.
func (k *killer) checkTerminated(run killedRun, n int) {
	t := k.t
	t.Helper()
	if run.killed && run.stderr != "" {
		t.Errorf("run %d died of SIGTERM instead of winding down; stderr:\n%s", n, lastLines(run.stderr, 10))
	}
	if run.exit == exitConverged && run.count("telling of the run") > 0 && !strings.Contains(run.told(), "no answer within") {
		t.Errorf("run %d exited 0 after SIGTERM, which came before it was done telling of itself; stderr:\n%s", n, lastLines(run.stderr, 10))
	}
	if holder, held := k.lockHeld(); held {
		t.Errorf("run %d, sent SIGTERM, left the lock held by %s", n, holder)
	}
}
