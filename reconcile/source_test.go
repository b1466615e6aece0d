// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/redact"
)

func TestHTTPSAuthComesFromTheEnvironment(t *testing.T) {
	t.Setenv("GPUFLEET_GIT_TOKEN", "canary-token-1234")
	auth, err := authFor(SourceOptions{URL: "https://git.example.com/acme/fleets.git"})
	if err != nil {
		t.Fatal(err)
	}
	basic, ok := auth.(*githttp.BasicAuth)
	if !ok || basic.Password != "canary-token-1234" {
		t.Fatalf("auth = %#v, want the token as the password", auth)
	}
	if strings.Contains(basic.String(), "canary") {
		t.Error("the auth's String() shows the token")
	}
	if auth, _ := authFor(SourceOptions{URL: "file:///srv/fleets.git"}); auth != nil {
		t.Errorf("a local repository got auth %v", auth)
	}
	if got := redact.URL("https://user:canary-token-1234@git.example.com/a.git"); strings.Contains(got, "canary") || strings.Contains(got, "user") {
		t.Errorf("redact left credentials in %q", got)
	}
}

// An SSH host key that is not in known_hosts is refused, never trusted on
// first use.
func TestSSHRefusesUnknownHostKeys(t *testing.T) {
	dir := t.TempDir()
	_, clientKey, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(clientKey, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	knownPub, _, _ := ed25519.GenerateKey(rand.Reader)
	known, _ := ssh.NewPublicKey(knownPub)
	knownHosts := filepath.Join(dir, "known_hosts")
	line := "git.example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(known))) + "\n"
	if err := os.WriteFile(knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUFLEET_GIT_SSH_KEY", keyFile)
	t.Setenv("GPUFLEET_GIT_KNOWN_HOSTS", knownHosts)
	auth, err := authFor(SourceOptions{URL: "ssh://git@git.example.com/acme/fleets.git"})
	if err != nil {
		t.Fatal(err)
	}
	keys := auth.(*gitssh.PublicKeys)
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}
	if err := keys.HostKeyCallback("git.example.com:22", addr, known); err != nil {
		t.Errorf("the known host key was refused: %v", err)
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(otherPub)
	if err := keys.HostKeyCallback("git.example.com:22", addr, other); err == nil || !strings.Contains(err.Error(), "refusing git.example.com") {
		t.Errorf("a changed host key was accepted: %v", err)
	}
	if err := keys.HostKeyCallback("evil.example.com:22", addr, other); err == nil {
		t.Error("an unknown host was accepted")
	}
}

func TestASecondRunWithoutWaitingSaysWhoHoldsTheLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Config{Seed: 11})
	holder := e.checkout()
	lock, err := holder.Lock(context.Background(), LockOptions{Holder: "ci-runner-7:4242", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	before := e.Mutations()
	_, err = e.run(nil)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "ci-runner-7:4242" || !strings.Contains(err.Error(), "the repository lock is held by ci-runner-7:4242") ||
		!strings.Contains(err.Error(), "expires at") || !strings.Contains(err.Error(), "gpufleet unlock") {
		t.Fatalf("second run: %v", err)
	}
	if e.Mutations() != before {
		t.Error("a run that did not get the lock changed a cloud")
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.run(nil); err != nil {
		t.Errorf("after the release: %v", err)
	}
}
