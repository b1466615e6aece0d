// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
	"github.com/gpufleet/gpufleet/schema"
)

// TestCrashSweep kills real `gpufleet reconcile` processes with SIGKILL at
// random moments — while they clone, observe, apply and push — against a
// real `gpufleet sim serve` whose clouds misbehave: Azure creates that fail
// after they were accepted, Azure deletes that fail, so the failed VMs stay
// behind, stock-outs and throttling. Before every run a person changes the
// fleets, so that each run has creates and deletes to be killed in, and
// after every kill an operator frees the lock the dead run left, as the
// lock's message tells them to. Then the faults stop, and within two runs
// the clouds must match the specs: no token with two live nodes, no
// instance the status at the origin's head does not account for as live,
// an origin `git fsck` finds clean, and the lock free.
//
// GPUFLEET_CRASH_KILLS sets the number of kills (20) and
// GPUFLEET_CRASH_SEED picks another history. Only where the kills land
// depends on timing; the verdict must not. Linux only: after a kill it
// waits for the run's Git children through /proc. -short skips it.
func TestCrashSweep(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill sweep of real gpufleet processes; run without -short")
	}
	crashSweepWith(t, filepath.Join("testdata", "crash-faults.json"), crashEnvInt(t, "GPUFLEET_CRASH_KILLS", 20), false)
}

// TestCrashSweepOnLambda is the sweep with the changes on Lambda Cloud,
// whose API takes no idempotency token and keeps no tags: gpufleet finds a
// node by its name, listing before every launch. Before each kill the
// example's finetune workload, which runs there, grows or shrinks, and
// chat with it; Lambda's launches lose their answer after making the
// instance (so a create is retried with its node already made), its
// lists and terminates fail now and then, and requests are throttled.
// The verdict is the other sweep's: no token with two live nodes, none the
// status does not account for, the origin clean and the lock free.
func TestCrashSweepOnLambda(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a kill sweep of real gpufleet processes; run without -short")
	}
	crashSweepWith(t, filepath.Join("testdata", "crash-faults-lambda.json"), crashEnvInt(t, "GPUFLEET_CRASH_KILLS", 20), true)
}

// crashSweepWith runs a sweep of kills with the faults of a file; onLambda
// changes the fleets on Lambda Cloud rather than on the hyperscalers.
func crashSweepWith(t *testing.T, faults string, kills int, onLambda bool) {
	began := time.Now()
	seed := crashEnvInt(t, "GPUFLEET_CRASH_SEED", 2026)
	r := rand.New(rand.NewPCG(uint64(seed), 0x6b696c6c))

	s := newCrashSweep(t, seed)
	s.onLambda = onLambda
	// The faults: a few Azure creates of batch/eval's VM size fail after
	// ARM accepted them, and the first 40 Azure deletes fail, the
	// clean-ups of those creates among them, so Failed VMs stay behind;
	// stock-outs and throttling strike at a rate. The stock-outs are
	// capped, and aimed at sizes with room elsewhere: an offer out of
	// capacity stays blocklisted for half an hour after the faults stop,
	// and the runs after them must still have room for every node.
	s.sim = s.startSim(faults)
	shared := filepath.Join(s.dir, "work")

	// The first run creates every node; the next, after a change of the
	// fleets like those before each kill, is the kind of run the kills
	// interrupt. How long such runs take varies threefold (a delete
	// retried through server errors, a re-plan after a stock-out), so the
	// kills strike within the median length of those that finished, kept
	// up to date by the runs that finished before their kill.
	first := s.reconcile(shared, 0)
	s.pushSpec(s.nextSpec(r))
	measured := s.reconcile(shared, 0)
	finished := []time.Duration{measured.took}
	t.Logf("unkilled runs: the first (every node) took %v, exit %d; the next (a change of the fleets) took %v, exit %d",
		first.took.Round(time.Millisecond), first.exit, measured.took.Round(time.Millisecond), measured.exit)

	landed := map[string]int{}
	freed := 0 // locks a dead run left, freed by unlock --force
	// Each kill strikes in its own slice of the run, the slices in a
	// random order: a few kills drawn at random would leave the short
	// steps at the end, the commit and the push, out.
	strata := r.Perm(kills)
	for i := range kills {
		s.pushSpec(s.nextSpec(r))
		// gpufleet reuses its clone run after run; a fresh one now and
		// then is a reconciler on another machine, or one whose disk went.
		workDir, where := shared, "shared"
		if r.IntN(4) == 0 {
			workDir, where = filepath.Join(s.dir, fmt.Sprintf("fresh-%d", i)), "fresh"
		}
		typical := crashMedian(finished)
		// At least a nanosecond: no delay means no kill.
		delay := max(1, time.Duration((float64(strata[i])+r.Float64())/float64(kills)*float64(typical)))
		before := s.originHead()
		run := s.reconcile(workDir, delay)
		if !run.killed {
			finished = append(finished, run.took)
		}
		at := s.landing(run, before, workDir)
		landed[at]++
		t.Logf("kill %2d at %6v of ~%6v, %s workdir: %-30s %2d created, %2d deleted",
			i+1, delay.Round(time.Millisecond), typical.Round(time.Millisecond), where, at, run.count("created"), run.count("deleted"))
		if !run.killed && run.exit == exitError {
			t.Logf("kill %2d: the run failed first: %s", i+1, lastLines(run.stderr, 3))
		}
		if s.unlock(workDir) {
			freed++
		}
	}
	fired := map[string]int{}
	for _, f := range s.world().Faults() {
		fired[f.Kind] += f.Fired
	}

	runs := s.converge(shared)
	instances := s.world().Instances()
	s.noteFailed(instances)
	duplicates := crashDuplicates(t, instances)
	leaked, live := s.checkAccounted(instances)
	s.checkFsck()
	if holder, held := s.lockHeld(); held {
		t.Errorf("the repository lock is still held at the end, by %s", holder)
	}
	t.Logf("crash sweep (seed %d): %d kills; landed: %v; exit codes: %v; locks freed: %d; faults fired: %v; failed VMs seen: %d; "+
		"work directories broken: %d; runs to converge: %d; duplicates: %d; leaked: %d; %d live instances; took %v",
		seed, kills, landed, s.exits, freed, fired, len(s.failedVMs), s.broken, runs, duplicates, leaked, live, time.Since(began).Round(time.Millisecond))
}

// converge stops the faults — a fault file replaces the rules the state
// holds — and reconciles until the clouds match the specs, at most twice,
// failing the test if they do not; it returns the runs it took, and stops
// the emulator.
func (s *crashSweep) converge(workDir string) int {
	t := s.t
	t.Helper()
	s.sim.interrupt(t)
	empty := filepath.Join(s.dir, "no-faults.json")
	if err := os.WriteFile(empty, []byte(`{"faults": []}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.sim = s.startSim(empty)
	s.unlock(workDir)
	runs, converged := 0, false
	for runs < 2 && !converged {
		runs++
		run := s.reconcile(workDir, 0)
		converged = run.exit == exitConverged
		if !converged {
			t.Logf("convergence run %d exited %d; stdout:\n%s\nstderr (last lines):\n%s", runs, run.exit, run.stdout, lastLines(run.stderr, 20))
		}
	}
	s.sim.interrupt(t)
	if !converged {
		t.Errorf("not converged within %d runs without faults", runs)
	}
	return runs
}

// crashSweep is the scratch world of the sweep: the origin repository, the
// emulator's state file and process, and what was seen along the way.
type crashSweep struct {
	t      *testing.T
	bin    string
	dir    string
	origin string
	url    string
	state  string
	seed   int
	sim    *simProcess
	runs   int
	spec   crashSpec
	// onLambda changes finetune, which runs on Lambda Cloud, and chat,
	// rather than eval and chat.
	onLambda bool
	// exits counts how runs ended: an exit code, or "killed".
	exits map[string]int
	// failedVMs are the Azure VMs seen in the Failed state after any run.
	failedVMs map[string]bool
	// broken counts work directories a kill left unusable.
	broken int
}

func newCrashSweep(t *testing.T, seed int) *crashSweep {
	t.Helper()
	env := testenv.NewOrigin(t, testenv.Example(t))
	dir := env.Dir
	s := &crashSweep{t: t, bin: compileGpufleet(t), dir: dir, origin: env.Origin, url: env.URL, state: filepath.Join(dir, "clouds.json"),
		seed: seed, exits: map[string]int{}, failedVMs: map[string]bool{}, spec: crashSpec{eval: 8, chat: 6, finetune: 2}}
	// The runs look for a price catalog under their working directory:
	// an empty one makes them use the embedded snapshot, as the emulator
	// does.
	if err := os.Mkdir(filepath.Join(dir, "cwd"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// startSim runs `gpufleet sim serve` on the sweep's state with the faults
// of a file.
func (s *crashSweep) startSim(faults string) *simProcess {
	s.t.Helper()
	return startSimProcess(s.t, s.bin, "--state", s.state, "--faults", faults, "--seed", strconv.Itoa(s.seed))
}

// world reads the emulator's state file as it is now.
func (s *crashSweep) world() *sim.World {
	s.t.Helper()
	w, err := sim.New(sim.Config{StatePath: s.state})
	if err != nil {
		s.t.Fatalf("reading the emulator's state, %v", err)
	}
	return w
}

// crashRun is how one gpufleet process went.
type crashRun struct {
	took   time.Duration
	killed bool
	exit   int
	stdout string
	stderr string
	// logs are the JSON log lines it wrote before it ended.
	logs []map[string]any
}

// count is how many log lines have msg.
func (r crashRun) count(msg string) int {
	n := 0
	for _, l := range r.logs {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// reconcile runs `gpufleet reconcile` in workDir and, when killAfter is
// not zero, kills it with SIGKILL that long after it started unless it
// finished first.
func (s *crashSweep) reconcile(workDir string, killAfter time.Duration) crashRun {
	s.t.Helper()
	run := s.gpufleet(killAfter, "reconcile", "--repo", s.url, "--workdir", workDir, "--log-format", "json", "--log-level", "debug")
	switch {
	case run.killed:
		s.exits["killed"]++
	default:
		s.exits[strconv.Itoa(run.exit)]++
	}
	s.noteFailed(s.world().Instances())
	return run
}

// unlock frees the lock a killed run left, as an operator who knows the
// holder is dead does, and reports whether there was one to free. A work
// directory a kill left unusable is a failure of gpufleet's; the operator
// then removes it, as gpufleet's messages advise for a clone it cannot
// open, and the sweep goes on.
func (s *crashSweep) unlock(workDir string) bool {
	s.t.Helper()
	args := []string{"unlock", "--repo", s.url, "--workdir", workDir, "--force"}
	run := s.gpufleet(0, args...)
	if run.exit != 0 {
		s.broken++
		s.t.Errorf("a kill left the work directory unusable until removed: `gpufleet %s` exits %d (empty files in its .git: %v); stderr:\n%s",
			strings.Join(args, " "), run.exit, crashEmptyFiles(filepath.Join(workDir, git.GitDirName)), run.stderr)
		if err := os.RemoveAll(workDir); err != nil {
			s.t.Fatal(err)
		}
		if run = s.gpufleet(0, args...); run.exit != 0 {
			s.t.Fatalf("`gpufleet %s` exits %d even in a new work directory; stderr:\n%s", strings.Join(args, " "), run.exit, run.stderr)
		}
	}
	return strings.HasPrefix(run.stdout, "Freed")
}

// crashEmptyFiles lists the empty files under dir: what a write cut short
// by a kill leaves.
func crashEmptyFiles(dir string) []string {
	var empty []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() == 0 {
			rel, _ := filepath.Rel(dir, path)
			empty = append(empty, rel)
		}
		return nil
	})
	return empty
}

// gpufleet runs the binary with the emulator's endpoints, in a process
// group of its own, so that its children can be waited for after a kill.
func (s *crashSweep) gpufleet(killAfter time.Duration, args ...string) crashRun {
	t := s.t
	t.Helper()
	s.runs++
	base := filepath.Join(s.dir, "logs", fmt.Sprintf("%03d-%s", s.runs, args[0]))
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	// Files rather than pipes: a Git child outliving a killed gpufleet
	// must not hold up Wait.
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
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = filepath.Join(s.dir, "cwd")
	cmd.Env = append(crashBaseEnv(), s.sim.env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// A run that hangs is a failure of its own, not a reason to hang.
	const guard = 3 * time.Minute
	limit := guard
	if killAfter > 0 {
		limit = killAfter
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	run := crashRun{}
	select {
	case <-done:
	case <-timer.C:
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if killAfter == 0 {
			t.Fatalf("gpufleet %s did not finish within %v; stderr:\n%s", strings.Join(args, " "), guard, readFileText(stderr.Name()))
		}
		run.killed = cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled()
	}
	run.took = time.Since(start)
	run.exit = cmd.ProcessState.ExitCode()
	if run.killed {
		s.awaitGroup(cmd.Process.Pid)
	}
	run.stdout, run.stderr = readFileText(stdout.Name()), readFileText(stderr.Name())
	for _, line := range strings.Split(run.stderr, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil {
			run.logs = append(run.logs, entry)
		}
	}
	return run
}

// awaitGroup waits until no live process is left in a killed gpufleet's
// process group. Its Git children (git-receive-pack for a file:// push)
// stand for the Git server, which a client's crash does not stop: one
// finishing a push after the operator looked would make the next run's
// lock depend on timing.
func (s *crashSweep) awaitGroup(pgid int) {
	deadline := time.Now().Add(10 * time.Second)
	for crashGroupAlive(pgid) {
		if time.Now().After(deadline) {
			s.t.Logf("processes of group %d still running 10s after the kill; killing them", pgid)
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// crashGroupAlive reports whether a process other than a zombie is in the
// group: orphans are reparented to a PID 1 that may never reap them.
func crashGroupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) >= 3 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// crashBaseEnv is the test's environment without gpufleet's own
// variables, which would point the runs elsewhere.
func crashBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GPUFLEET_") || strings.HasPrefix(kv, schema.SecretEnvPrefix) {
			env = append(env, kv)
		}
	}
	return env
}

// landing names the moment a run was killed in, from what it logged and
// what it left in the repositories.
func (s *crashSweep) landing(run crashRun, before plumbing.Hash, workDir string) string {
	if !run.killed {
		return fmt.Sprintf("finished first (exit %d)", run.exit)
	}
	if s.originHead() != before {
		return "after its push"
	}
	if local, ok := crashLocalHead(workDir); ok && local.NumParents() == 1 && local.ParentHashes[0] == before {
		return "report: committed, unpushed"
	}
	if run.count("status unchanged; nothing to commit") > 0 {
		return "report: nothing to commit"
	}
	// The report step logs nothing until it has committed: a kill in it
	// before the commit reads as one in apply.
	step := "clone, lock or sync"
	for _, l := range run.logs {
		if l["msg"] == "step" {
			step, _ = l["name"].(string)
		}
	}
	if step == "apply" {
		return "apply, or report before commit"
	}
	return step
}

// crashLocalHead is the commit a work directory's branch is at, if the
// kill left a clone there.
func crashLocalHead(workDir string) (*object.Commit, bool) {
	repo, err := git.PlainOpen(workDir)
	if err != nil {
		return nil, false
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return nil, false
	}
	c, err := repo.CommitObject(ref.Hash())
	return c, err == nil
}

// crashSpec is what the person sets: the nodes of batch/eval (Azure spot)
// and of inference/chat (AWS and GCP on-demand).
type crashSpec struct{ eval, chat, finetune int }

// nextSpec draws a change of the fleets. Its ranges keep every change
// within the example's disruption budget of 8, so no run defers a deletion.
func (s *crashSweep) nextSpec(r *rand.Rand) crashSpec {
	for {
		next := crashSpec{eval: []int{6, 8, 10}[r.IntN(3)], chat: 4 + r.IntN(5), finetune: 2}
		if s.onLambda {
			next = crashSpec{eval: 8, chat: 6, finetune: 1 + r.IntN(9)}
		}
		if next != s.spec {
			return next
		}
	}
}

// pushSpec commits the spec to the origin from a clone of its own, as a
// person would.
func (s *crashSweep) pushSpec(spec crashSpec) {
	t := s.t
	t.Helper()
	s.runs++
	dir := filepath.Join(s.dir, fmt.Sprintf("person-%d", s.runs))
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: s.url})
	if err != nil {
		t.Fatalf("cloning the origin as a person, %v", err)
	}
	edits := map[string][2]string{
		"fleets/batch.cue":     {"nodes: 8", fmt.Sprintf("nodes: %d", spec.eval)},
		"fleets/inference.cue": {"nodes: 6", fmt.Sprintf("nodes: %d", spec.chat)},
		"fleets/training.cue":  {"nodes: 2", fmt.Sprintf("nodes: %d", spec.finetune)},
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(edits)) {
		orig, err := fs.ReadFile(examples.FleetRepo, "fleet-repo/"+name)
		if err != nil {
			t.Fatal(err)
		}
		edit := edits[name]
		if !bytes.Contains(orig, []byte(edit[0])) {
			t.Fatalf("examples/fleet-repo/%s no longer says %q", name, edit[0])
		}
		changed := bytes.Replace(orig, []byte(edit[0]), []byte(edit[1]), 1)
		if err := os.WriteFile(filepath.Join(dir, name), changed, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "someone", Email: "someone@example.com", When: time.Now()}
	msg := fmt.Sprintf("Eval to %d nodes, chat to %d, finetune to %d", spec.eval, spec.chat, spec.finetune)
	if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{}); err != nil {
		t.Fatalf("pushing %q, %v", msg, err)
	}
	s.spec = spec
	os.RemoveAll(dir)
}

// originHead is the origin's main branch.
func (s *crashSweep) originHead() plumbing.Hash {
	s.t.Helper()
	repo, err := git.PlainOpen(s.origin)
	if err != nil {
		s.t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		s.t.Fatal(err)
	}
	return ref.Hash()
}
