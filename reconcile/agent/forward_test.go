// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// A replica that answers a passed-on delivery with a redirect does not get
// it followed: the signed body goes to the replica --peer-url names or
// nowhere, and GitHub is told the delivery did not get through.
func TestAForwardedWebhookFollowsNoRedirect(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	catcher := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		leaked = append(leaked, fmt.Sprintf("%s %s %q", r.Method, r.Header.Get("X-Hub-Signature-256"), body))
		mu.Unlock()
	}))
	defer catcher.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, catcher.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()

	var repos []Repo
	for i := range 12 {
		repos = append(repos, Repo{URL: fmt.Sprintf("https://github.com/acme/fleets-%d", i), Branch: "main"})
	}
	log, _ := testLog(t)
	a, err := New(Options{Repos: repos, Secret: secret, Log: log, Shard: Shard{Ordinal: 0, Replicas: 2},
		Peer: func(int) string { return redirecting.URL }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if len(a.others) == 0 {
		t.Fatal("replica 0 of 2 leaves no repository to replica 1")
	}
	payload := pushPayload(a.others[0].repo.URL+".git", "refs/heads/main")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhook/github", bytes.NewReader(payload))
	req.Header = githubHeader("push", payload, "", "d-redirect")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a delivery passed to a replica that redirects: %s, want 502", resp.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range leaked {
		t.Errorf("the redirect's target was sent %s", l)
	}
}
