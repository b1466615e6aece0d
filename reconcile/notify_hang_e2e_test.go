// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/reconcile/notify"
)

// lockAtOrigin says who holds the origin's repository lock, "" when no
// one does.
func lockAtOrigin(origin string) (string, error) {
	repo, err := git.PlainOpen(origin)
	if err != nil {
		return "", err
	}
	ref, err := repo.Reference(lockRef, true)
	if err != nil {
		return "", err
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return "", err
	}
	holder := "someone"
	for _, line := range strings.Split(c.Message, "\n") {
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "released-by":
			return "", nil
		case "holder":
			holder = value
		}
	}
	return holder, nil
}

// hangingReceiver accepts a delivery and never answers it while its
// client waits, until the test ends; it says when one arrives, and who held the lock
// at that moment.
func hangingReceiver(t *testing.T, origin string) (url string, arrived <-chan string) {
	t.Helper()
	got := make(chan string, 16)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		holder, err := lockAtOrigin(origin)
		if err != nil {
			holder = fmt.Sprintf("(reading the lock: %v)", err)
		}
		got <- holder
		// The server notices a client that goes away only once it has
		// read the body.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return srv.URL, got
}

// A notification receiver that never answers holds neither the lock nor
// the run: the run tells of itself after releasing the lock, gives up
// within GPUFLEET_NOTIFY_TIMEOUT, and ends at once when it is cancelled,
// as SIGTERM cancels it. Each bound below only tells a hang from an end.
func TestANotificationThatHangsHoldsNeitherTheLockNorTheRun(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, seed uint64, timeout string) (*env, <-chan string, func(*Options)) {
		e := newEnv(t, sim.Config{Seed: seed})
		url, arrived := hangingReceiver(t, e.Origin)
		cfg := exampleFile(t, "gpufleet.cue") + "\ngpufleet: notifications: webhook: {urlEnv: \"TEST_HOOK_URL\", secretEnv: \"TEST_HOOK_KEY\"}\n"
		e.Push("gpufleet.cue", cfg, "Tell a webhook")
		vars := map[string]string{"TEST_HOOK_URL": url, "TEST_HOOK_KEY": "k3y-for-hooks", notify.TimeoutEnv: timeout}
		notifier := notify.New(func(k string) string { return vars[k] })
		return e, arrived, func(o *Options) { o.Notifier = notifier }
	}
	start := func(e *env, ctx context.Context, edit func(*Options)) <-chan error {
		c := e.checkout()
		opts := e.options(c)
		edit(&opts)
		done := make(chan error, 1)
		go func() {
			_, err := Run(ctx, c, opts)
			done <- err
		}()
		return done
	}

	t.Run("cancelled while it waits", func(t *testing.T) {
		e, arrived, edit := setup(t, 41, "1h")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(e, ctx, edit)
		select {
		case holder := <-arrived:
			if holder != "" {
				t.Errorf("the lock was held by %s while the run told of itself", holder)
			}
		case err := <-done:
			t.Fatalf("the run ended without telling of its changes: %v", err)
		case <-time.After(2 * time.Minute):
			t.Fatal("no notification two minutes after the run started")
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("a run that finished its work before it was cancelled: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the cancelled run was still telling of itself a minute later")
		}
		checkConverged(t, e)
	})

	t.Run("given up", func(t *testing.T) {
		e, arrived, edit := setup(t, 42, "200ms")
		select {
		case err := <-start(e, context.Background(), edit):
			if err != nil {
				t.Errorf("a notification that could not be delivered failed the run: %v", err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("the run was still going two minutes later")
		}
		select {
		case holder := <-arrived:
			if holder != "" {
				t.Errorf("the lock was held by %s while the run told of itself", holder)
			}
		default:
			t.Error("the run told no one of its changes")
		}
		if holder, err := lockAtOrigin(e.Origin); err != nil || holder != "" {
			t.Errorf("after the run, the lock is held by %q (%v)", holder, err)
		}
	})
}
