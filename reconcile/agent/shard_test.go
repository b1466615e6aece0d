// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Every repository falls to exactly one of the replicas, and to the same
// one whichever replica asks; the shards of 90 repositories over three
// replicas are none of them empty.
func TestEveryRepositoryHasOneReplica(t *testing.T) {
	var repos []Repo
	for i := range 90 {
		repos = append(repos, Repo{URL: fmt.Sprintf("https://git.example/fleets-%d.git", i)})
	}
	owner := map[string]int{}
	for ordinal := range 3 {
		a, err := New(Options{Repos: repos, Shard: Shard{Ordinal: ordinal, Replicas: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.workers) == 0 {
			t.Errorf("replica %d has no repository", ordinal)
		}
		if len(a.workers)+len(a.others) != len(repos) {
			t.Errorf("replica %d sees %d+%d repositories, want %d", ordinal, len(a.workers), len(a.others), len(repos))
		}
		for _, w := range a.workers {
			if prev, ok := owner[w.id]; ok {
				t.Errorf("%s is reconciled by replicas %d and %d", w.id, prev, ordinal)
			}
			owner[w.id] = ordinal
		}
	}
	if len(owner) != len(repos) {
		t.Errorf("%d of %d repositories have a replica", len(owner), len(repos))
	}
	for _, s := range []Shard{{Ordinal: 3, Replicas: 3}, {Ordinal: -1, Replicas: 3}, {Ordinal: 1, Replicas: 0}, {Ordinal: 0, Replicas: -1}, {Ordinal: 1, Replicas: 1}} {
		if _, err := New(Options{Repos: repos, Shard: s}); err == nil {
			t.Errorf("replica %d of %d was accepted", s.Ordinal, s.Replicas)
		}
	}
}

func TestOrdinalFromHostname(t *testing.T) {
	for host, want := range map[string]int{"gpufleet-0": 0, "gpufleet-12": 12, "a-b-3": 3} {
		if got, err := OrdinalFromHostname(host); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", host, got, err, want)
		}
	}
	for _, host := range []string{"gpufleet", "gpufleet-", "gpufleet-x", "laptop"} {
		if _, err := OrdinalFromHostname(host); err == nil {
			t.Errorf("%s gave an ordinal", host)
		}
	}
}

// A push webhook that reaches a replica whose shard does not hold the
// repository is passed on to the replica whose shard does, signature and
// all, and triggers the run there only.
func TestWebhooksReachTheReplicaOfTheirShard(t *testing.T) {
	var repos []Repo
	for i := range 12 {
		repos = append(repos, Repo{URL: fmt.Sprintf("https://github.com/acme/fleets-%d", i), Branch: "main"})
	}
	log, _ := testLog(t)
	agents := make([]*Agent, 2)
	servers := make([]*httptest.Server, 2)
	for ordinal := range 2 {
		a, err := New(Options{Repos: repos, Secret: secret, Log: log, Shard: Shard{Ordinal: ordinal, Replicas: 2},
			Peer: func(n int) string { return servers[n].URL }})
		if err != nil {
			t.Fatal(err)
		}
		agents[ordinal] = a
		servers[ordinal] = httptest.NewServer(a.Handler())
		defer servers[ordinal].Close()
	}
	// A repository of replica 1's shard, pushed to replica 0.
	var target *worker
	for _, w := range agents[1].workers {
		target = w
	}
	payload := pushPayload(target.repo.URL+".git", "refs/heads/main")
	req, _ := http.NewRequest(http.MethodPost, servers[0].URL+"/webhook/github", bytes.NewReader(payload))
	req.Header = githubHeader("push", payload, "", "d-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(body), "triggered") {
		t.Errorf("through replica 0: %d %s", resp.StatusCode, body)
	}
	if target.triggered.Load() != 1 {
		t.Errorf("the owning replica's run was triggered %d times, want 1", target.triggered.Load())
	}
	for _, w := range agents[0].workers {
		if w.triggered.Load() != 0 {
			t.Errorf("replica 0 ran %s", w.name)
		}
	}
	// A forged delivery passed on is refused by the owner too.
	req, _ = http.NewRequest(http.MethodPost, servers[0].URL+"/webhook/github", bytes.NewReader(payload))
	req.Header = githubHeader("push", payload, "sha256=00", "d-2")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged delivery: %v %v", resp.StatusCode, err)
	}
}

// A push passed on to a replica that is down gets 502 and is not
// remembered, by either replica: GitHub's redelivery of it, with the same
// delivery id, runs once the owner is back, and a further copy is a
// duplicate. An owner answering 503 (shutting down) leaves it unhandled
// too.
func TestWebhookForADownReplicaRunsWhenRedelivered(t *testing.T) {
	var repos []Repo
	for i := range 12 {
		repos = append(repos, Repo{URL: fmt.Sprintf("https://github.com/acme/fleets-%d", i), Branch: "main"})
	}
	log, _ := testLog(t)
	owner, err := New(Options{Repos: repos, Secret: secret, Log: log, Shard: Shard{Ordinal: 1, Replicas: 2}})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(owner.Handler())
	defer up.Close()
	// Replica 1 down: its connection closes without an answer.
	down := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	defer down.Close()
	stopping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		replyError(w, http.StatusServiceUnavailable, "shutting down")
	}))
	defer stopping.Close()
	var peer atomic.Pointer[httptest.Server]
	peer.Store(down)
	front, err := New(Options{Repos: repos, Secret: secret, Log: log, Shard: Shard{Ordinal: 0, Replicas: 2},
		Peer: func(int) string { return peer.Load().URL }})
	if err != nil {
		t.Fatal(err)
	}
	h := front.Handler()
	var target *worker
	for _, w := range owner.workers {
		target = w
	}
	payload := pushPayload(target.repo.URL+".git", "refs/heads/main")
	const id = "5ad1e3a0-1e55-11f0-8a5b-0a58a9feac10"
	for _, tt := range []struct {
		name     string
		peer     *httptest.Server
		code     int
		body     string
		triggers int64
	}{
		{"the owner is down", down, http.StatusBadGateway, "did not answer", 0},
		{"redelivered while the owner shuts down", stopping, http.StatusServiceUnavailable, "shutting down", 0},
		{"redelivered once the owner is back", up, http.StatusAccepted, `"triggered"`, 1},
		{"redelivered again", up, http.StatusOK, `"duplicate"`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			peer.Store(tt.peer)
			code, body := deliver(h, githubHeader("push", payload, "", id), payload)
			if code != tt.code || !strings.Contains(body, tt.body) {
				t.Errorf("answer %d %s, want %d with %s", code, body, tt.code, tt.body)
			}
			if n := target.triggered.Load(); n != tt.triggers {
				t.Errorf("the owner's run was triggered %d times, want %d", n, tt.triggers)
			}
		})
	}
}
