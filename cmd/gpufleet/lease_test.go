// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

// leaseNodes is the size of the fleet the killed replica was launching.
const leaseNodes = 4

// leaseFleet is a GCE fleet of one-node workloads: each node is its own
// launch, not one batch, and a GCE create waits for its operation, which
// the emulator makes last --op-latency, so with one call in flight a run
// holds the lock for several seconds while it launches.
var leaseFleet = map[string]string{
	"gpufleet.cue": "package gpufleet\n\ngpufleet: clouds: gcp: {project: \"acme-gpu-fleet\", regions: [\"us-central1\"]}\n",
	"fleets/f.cue": leaseFleetSpec(),
}

func leaseFleetSpec() string {
	var b strings.Builder
	b.WriteString("package gpufleet\n\nfleets: lease: {\n\towner: \"team\"\n")
	for i := range leaseNodes {
		fmt.Fprintf(&b, "\tworkloads: w%d: {\n\t\tgpu: {model: \"L4\", perNode: 1}\n\t\tnodes: 1\n\t}\n", i)
	}
	b.WriteString("}\n")
	return b.String()
}

// A `gpufleet serve` replica killed (SIGKILL, as an evicted pod is) while
// it launches a fleet leaves the repository lock held by its dead run.
// Restarted with the same arguments and the default lock TTL, it finds
// that lock held, tries again just past its expiry rather than at its next
// interval (ten minutes off), takes the lock over and finishes the fleet:
// within a minute of the restart, with the nodes the spec asks for and
// never one more, though the killed run left some launched and none
// recorded.
func TestAKilledServeReplicaResumesItsRepositoryWithinAMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a serve replica and waits for its lease to lapse; run without -short")
	}
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := buildGpufleet(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "clouds.json")
	sim := startSimProcess(t, bin, "--state", state, "--op-latency", "2s")

	serveDir := filepath.Join(dir, "git")
	bare := filepath.Join(serveDir, "fleets.git")
	mustGit(t, "", "init", "-q", "--bare", "-b", "main", bare)
	seed := filepath.Join(dir, "seed")
	writeFiles(t, seed, leaseFleet)
	git := gitIn(t, seed)
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "fleet")
	git("remote", "add", "origin", bare)
	git("push", "-q", "origin", "main")
	gitPort := freeTCPPort(t)
	testenv.GitDaemon(t, gitBin, serveDir, gitPort)
	url := fmt.Sprintf("git://127.0.0.1:%d/fleets.git", gitPort)

	// No --lock-ttl: the default lease is under test. The interval is far
	// beyond the test, so only the retry at the lock's expiry can resume.
	port := freeTCPPort(t)
	args := []string{"--repo", url, "--interval", "10m", "--jitter", "0", "--parallelism", "1",
		"--workdir", filepath.Join(dir, "clones")}
	nodes := func() int {
		n := liveNodes(t, bin, state, "lease")
		if n > leaseNodes {
			t.Fatalf("the fleet has %d nodes, more than the %d of its spec: a create was made twice", n, leaseNodes)
		}
		return n
	}
	first := startServe(t, bin, dir, "the first replica", port, args, sim.env)
	var dead lockMessage
	waitUntil(t, 60*time.Second, "the first replica holding the lock with a node launched", func() bool {
		dead = readLockRef(t, bare)
		return dead.held() && nodes() >= 1
	})
	first.kill()
	if n := nodes(); n >= leaseNodes {
		t.Fatalf("the first replica launched all %d nodes before it was killed: it was not killed mid-run\n%s", n, first.log)
	}
	if hasStatusCommit(t, bare) {
		t.Fatalf("the killed run committed a status\n%s", first.log)
	}
	if after := readLockRef(t, bare); !after.held() || after.run != dead.run {
		t.Fatalf("after the kill the lock says %+v, want it held by the killed run %s", after, dead.run)
	}
	t.Logf("killed holding the lock (run %s, until %s) with %d of %d nodes", dead.run, dead.until, nodes(), leaseNodes)

	restartedAt := time.Now()
	restarted := startServe(t, bin, dir, "the restarted replica", port, args, sim.env)
	waitUntil(t, 60*time.Second, "the restarted replica finishing the fleet and committing its status", func() bool {
		return nodes() == leaseNodes && hasStatusCommit(t, bare)
	})
	t.Logf("resumed and finished %s after the restart", time.Since(restartedAt).Round(time.Second))
	if n := nodes(); n != leaseNodes {
		t.Errorf("the fleet has %d nodes, want %d", n, leaseNodes)
	}
	if locked := restarted.runsBy(t, url, "locked"); locked < 1 {
		t.Errorf("the restarted replica's runs found the killed run's lock %d times: it was not restarted within the lock's TTL, or did not see the lock", locked)
	}
	// The restarted replica's run took the lock over from the dead one
	// and released it when done.
	waitUntil(t, 30*time.Second, "the lock released", func() bool {
		return readLockRef(t, bare).released
	})
	if last := readLockRef(t, bare); last.run == dead.run {
		t.Errorf("the lock was last held by the killed run %s, not taken over", dead.run)
	}
}

// lockMessage is what the commit at refs/gpufleet/lock says.
type lockMessage struct {
	holder, run, until string
	released           bool
}

func (m lockMessage) held() bool { return m.run != "" && m.holder != "" && !m.released }

// readLockRef reads the lock of a bare repository with git, as a person
// would; the zero lockMessage when there is none.
func readLockRef(t *testing.T, bare string) lockMessage {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", bare, "log", "-1", "--format=%B", "refs/gpufleet/lock", "--").Output()
	if err != nil {
		return lockMessage{}
	}
	var m lockMessage
	for _, line := range strings.Split(string(out), "\n") {
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "holder":
			m.holder = value
		case "run":
			m.run = value
		case "until":
			m.until = value
		case "released-by":
			m.released = true
		}
	}
	return m
}
