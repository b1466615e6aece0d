// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/reconcile/agent"
	"github.com/gpufleet/gpufleet/reconcile/testenv"
)

const shardRepos = 9

// shardFleet is fleet repository i: one fleet of its own, so the nine
// share the clouds without sharing a node.
func shardFleet(i, nodes int) map[string]string {
	return map[string]string{
		"gpufleet.cue": "package gpufleet\n\ngpufleet: clouds: aws: regions: [\"us-east-1\"]\n",
		"fleets/f.cue": fmt.Sprintf("package gpufleet\n\nfleets: f%d: {\n\towner: \"team\"\n\tworkloads: w: {\n\t\tgpu: {model: \"L4\", perNode: 1}\n\t\tnodes: %d\n\t}\n}\n", i, nodes),
	}
}

// Three `gpufleet serve` processes, replicas 0–2 of one StatefulSet, share
// nine repositories served by a real git daemon: each repository is
// reconciled by exactly one replica, the one its shard names. Once a
// replica is killed, its repositories wait — no other replica touches
// them — and when it comes back, it takes them up again, as soon as the
// lock its killed self held has expired (a TTL of seconds here).
//
// The shard of a repository hashes its URL, which holds the daemon's port,
// so the repositories are named once the port is known: three of each
// shard, whatever the port.
func TestThreeReplicasShareNineRepositories(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three serve replicas over nine repositories; run without -short")
	}
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := buildGpufleet(t)
	dir := t.TempDir()
	sim := startSimProcess(t, bin, "--state", filepath.Join(dir, "clouds.json"))

	serveDir := filepath.Join(dir, "git")
	port := freeTCPPort(t)
	names := namesByShard(port, 3, shardRepos/3)
	urls := make([]string, shardRepos)
	for i := range urls {
		urls[i] = fmt.Sprintf("git://127.0.0.1:%d/%s.git", port, names[i])
	}
	seeds := make([]string, shardRepos)
	for i := range shardRepos {
		bare := filepath.Join(serveDir, names[i]+".git")
		seeds[i] = filepath.Join(dir, "seed", fmt.Sprint(i))
		mustGit(t, "", "init", "-q", "--bare", "-b", "main", bare)
		writeFiles(t, seeds[i], shardFleet(i, 1))
		git := gitIn(t, seeds[i])
		git("init", "-q", "-b", "main")
		git("add", ".")
		git("commit", "-q", "-m", "fleet")
		git("remote", "add", "origin", bare)
		git("push", "-q", "origin", "main")
	}
	testenv.GitDaemon(t, gitBin, serveDir, port)

	replicas := make([]*replica, 3)
	start := func(ordinal int) {
		replicas[ordinal] = startReplica(t, bin, dir, ordinal, urls, sim.env)
	}
	for ordinal := range 3 {
		start(ordinal)
	}
	owner := func(i int) int { return agent.ShardOf(urls[i], 3) }
	// Each repository's status reaches its origin, from its own replica.
	waitUntil(t, 90*time.Second, "every repository's first status commit", func() bool {
		for i := range urls {
			if !hasStatusCommit(t, filepath.Join(serveDir, names[i]+".git")) {
				return false
			}
		}
		return true
	})
	// A run is counted once it has pushed: wait for the owners' counts.
	waitUntil(t, 30*time.Second, "every owner's count of its first run", func() bool {
		for i, u := range urls {
			if replicas[owner(i)].runs(t, u) == 0 {
				return false
			}
		}
		return true
	})
	for i, u := range urls {
		for ordinal, r := range replicas {
			runs := r.runs(t, u)
			if (ordinal == owner(i)) != (runs > 0) {
				t.Errorf("%s: replica %d ran it %d times; its shard is replica %d's", u, ordinal, runs, owner(i))
			}
		}
	}

	// Replica 1 dies. One of its repositories asks for a second node; no
	// other replica gives it one.
	victim := -1
	for i := range urls {
		if owner(i) == 1 {
			victim = i
			break
		}
	}
	if victim < 0 {
		t.Fatal("replica 1's shard is empty: pick other repository names")
	}
	replicas[1].kill()
	// ownRuns is how many runs a live replica has made of its own shard.
	ownRuns := func(ordinal int) int {
		n := 0
		for i, u := range urls {
			if owner(i) == ordinal {
				n += replicas[ordinal].runs(t, u)
			}
		}
		return n
	}
	seed := gitIn(t, seeds[victim])
	seed("pull", "-q", "--rebase", "origin", "main")
	writeFiles(t, seeds[victim], shardFleet(victim, 2))
	seed("commit", "-q", "-am", "two nodes")
	seed("push", "-q", "origin", "main")
	fleet := fmt.Sprintf("f%d", victim)
	// The live replicas run their own shards on, several times over after
	// the push, and never the dead one's repository.
	perShard := shardRepos / 3
	before0, before2 := ownRuns(0), ownRuns(2)
	waitUntil(t, 60*time.Second, "three more runs of each live replica's shard", func() bool {
		return ownRuns(0) >= before0+3*perShard && ownRuns(2) >= before2+3*perShard
	})
	if n := liveNodes(t, bin, filepath.Join(dir, "clouds.json"), fleet); n != 1 {
		t.Fatalf("with its replica down, %s has %d nodes: another replica applied its change", fleet, n)
	}
	for ordinal, r := range replicas {
		if ordinal != 1 && r.runs(t, urls[victim]) > 0 {
			t.Errorf("replica %d ran %s, of replica 1's shard", ordinal, urls[victim])
		}
	}

	// Replica 1 comes back and takes its shard up again.
	start(1)
	waitUntil(t, 60*time.Second, fleet+"'s second node from the restarted replica", func() bool {
		return liveNodes(t, bin, filepath.Join(dir, "clouds.json"), fleet) == 2
	})
}

// namesByShard names repositories r0, r1, … served at port, taking for each
// of replicas shards the first perShard names it holds.
func namesByShard(port, replicas, perShard int) []string {
	taken := make([]int, replicas)
	var names []string
	for i := 0; len(names) < replicas*perShard; i++ {
		name := fmt.Sprintf("r%d", i)
		shard := agent.ShardOf(fmt.Sprintf("git://127.0.0.1:%d/%s.git", port, name), replicas)
		if taken[shard] < perShard {
			taken[shard]++
			names = append(names, name)
		}
	}
	return names
}

type replica struct {
	cmd     *exec.Cmd
	metrics string
	log     *strings.Builder
}

func startReplica(t *testing.T, bin, dir string, ordinal int, urls, env []string) *replica {
	t.Helper()
	args := []string{"--replicas", "3", "--ordinal", strconv.Itoa(ordinal), "--interval", "1s", "--jitter", "0", "--lock-ttl", "4s",
		"--workdir", filepath.Join(dir, fmt.Sprintf("clones-%d", ordinal))}
	for _, u := range urls {
		args = append(args, "--repo", u)
	}
	return startServe(t, bin, dir, fmt.Sprintf("replica %d", ordinal), freeTCPPort(t), args, env)
}

// startServe runs `gpufleet serve` with args, listening on port, and waits
// for its metrics to answer.
func startServe(t *testing.T, bin, dir, name string, port int, args, env []string) *replica {
	t.Helper()
	args = append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, args...)
	r := &replica{cmd: exec.Command(bin, args...), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), log: &strings.Builder{}}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Dir = dir
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	waitUntil(t, 30*time.Second, name+"'s metrics", func() bool {
		resp, err := http.Get(r.metrics)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return r
}

func (r *replica) kill() {
	if r.cmd.ProcessState == nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// runs is how many runs of a repository the replica counts, of any result.
func (r *replica) runs(t *testing.T, repo string) int {
	t.Helper()
	return r.runsBy(t, repo, "[a-z_]+")
}

// runsBy is how many runs of a repository the replica counts whose result
// matches the regular expression result.
func (r *replica) runsBy(t *testing.T, repo, result string) int {
	t.Helper()
	if r.cmd.ProcessState != nil {
		return 0
	}
	resp, err := http.Get(r.metrics)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`gpufleet_reconcile_runs_total\{repo="` + regexp.QuoteMeta(repo) + `",result="` + result + `"\} (\d+)`)
	total := 0
	for _, m := range re.FindAllStringSubmatch(string(body), -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

func hasStatusCommit(t *testing.T, bare string) bool {
	out, err := exec.Command("git", "--git-dir", bare, "log", "--format=%an", "main").Output()
	return err == nil && strings.Contains(string(out), "gpufleet")
}

// liveNodes counts a fleet's pending and running instances in the
// emulator's state file.
func liveNodes(t *testing.T, bin, state, fleet string) int {
	t.Helper()
	out, err := exec.Command(bin, "sim", "inspect", "--state", state, "-o", "json").Output()
	if err != nil {
		t.Fatalf("sim inspect: %v", err)
	}
	var listing struct {
		Instances []struct {
			State string            `json:"state"`
			Tags  map[string]string `json:"tags"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(out, &listing); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, inst := range listing.Instances {
		if inst.Tags["gpufleet-fleet"] == fleet && (inst.State == "pending" || inst.State == "running") {
			n++
		}
	}
	return n
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitUntil(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
