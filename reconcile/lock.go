// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The lock is a ref in the fleet repository, refs/gpufleet/lock, pointing at
// a chain of small commits whose messages say who holds it and until when.
// Taking it pushes a child of the commit it points at: Git updates a ref
// only from the value the pusher saw, so of two reconcilers racing, one
// push wins and the other is rejected and looks again. A holder renews its
// lock while it runs, a quarter of the TTL at a time, so the TTL can be
// short, as a Kubernetes Lease's is: a holder that died leaves an expiry
// half a minute off at most, after which anyone may take the lock. A
// holder that cannot renew stops a tenth of the TTL before its expiry, so
// that its last cloud call is over before anyone else may start. A local checkout without a remote
// uses the same ref with a compare-and-swap in its own repository.

const (
	lockRef   = plumbing.ReferenceName("refs/gpufleet/lock")
	seenLock  = plumbing.ReferenceName("refs/gpufleet/seen-lock")
	lockTitle = "gpufleet lock"
)

// LockOptions say who takes the lock and how patiently.
type LockOptions struct {
	// Holder names the reconciler for people reading the lock (host and
	// process). Each taking of the lock adds a random run id, so two
	// holders of the same name are still told apart.
	Holder string
	// TTL is how long the lock holds without its holder renewing it:
	// how long a holder that died keeps others out. DefaultLockTTL when
	// zero.
	TTL time.Duration
	// Wait is how long to wait for a held lock; zero gives up at once.
	Wait time.Duration
	// Poll is how often to look again while waiting.
	Poll time.Duration
	Now  func() time.Time
}

// DefaultLockTTL is how long a lock outlives a holder that stopped
// renewing it, a quarter of which passes between renewals: a holder that
// died keeps its repositories half a minute at most, while a live one
// has three renewals' worth of slack before it gives up.
const DefaultLockTTL = 30 * time.Second

// lockUntil is the expiry of a lock taken or renewed at now. The lock's
// commit says it to the second, and the holder goes by what others read:
// rounded up, so that a lock never lasts less than its TTL.
func lockUntil(now time.Time, ttl time.Duration) time.Time {
	until := now.Add(ttl).UTC()
	if second := until.Truncate(time.Second); second.Before(until) {
		return second.Add(time.Second)
	}
	return until
}

// HeldError says another reconciler holds the lock.
type HeldError struct {
	Holder string
	Run    string
	Taken  time.Time
	Until  time.Time
	// Now is when the lock was read, to say how long it has left.
	Now time.Time
}

func (e *HeldError) Error() string {
	// unlock frees an expired lock as it is and a live one only with
	// --force: say the command that will work.
	if e.Until.After(e.Now) {
		return e.describe() + ". If that reconciler is no longer running, `gpufleet unlock --force` frees the lock now"
	}
	return e.describe() + ". If that reconciler is no longer running, `gpufleet unlock` frees the lock now"
}

// describe says who holds the lock, since when, and until when.
func (e *HeldError) describe() string {
	taken := ""
	if !e.Taken.IsZero() {
		taken = " since " + e.Taken.UTC().Format(time.RFC3339)
	}
	left := ""
	// Past a century, a Duration overflows; no lock lasts that long.
	if d := e.Until.Sub(e.Now); d > 0 && e.Until.Before(e.Now.AddDate(100, 0, 0)) {
		left = ", in " + d.Round(time.Second).String()
	}
	return fmt.Sprintf("the repository lock is held by %s (run %s)%s; it expires at %s%s, unless its holder releases it first",
		e.Holder, cmp.Or(e.Run, "unknown"), taken, e.Until.UTC().Format(time.RFC3339), left)
}

// Lock is a held repository lock.
type Lock struct {
	c      *Checkout
	holder string
	run    string
	taken  time.Time
	ttl    time.Duration
	now    func() time.Time

	mu     sync.Mutex
	commit plumbing.Hash
	until  time.Time
}

type lockState struct {
	hash     plumbing.Hash
	holder   string
	run      string
	taken    time.Time
	until    time.Time
	released bool
}

func (s lockState) held(now time.Time) bool {
	return s.hash != plumbing.ZeroHash && !s.released && now.Before(s.until)
}

// Lock takes the repository lock, waiting up to opts.Wait while another
// holder's lock has not expired.
func (c *Checkout) Lock(ctx context.Context, opts LockOptions) (*Lock, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultLockTTL
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	run := newRunID()
	deadline := opts.Now().Add(opts.Wait)
	for {
		current, err := c.readLock(ctx)
		if err != nil {
			return nil, err
		}
		now := opts.Now()
		if current.held(now) {
			if !now.Before(deadline) {
				return nil, &HeldError{Holder: current.holder, Run: current.run, Taken: current.taken, Until: current.until, Now: now}
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(opts.Poll):
			}
			continue
		}
		until := lockUntil(now, opts.TTL)
		commit, err := c.lockCommit(current.hash, heldMessage(opts.Holder, run, now, until), now)
		if err != nil {
			return nil, err
		}
		// A push once started is seen through, cancelled or not: cut
		// short, it could take the lock on the remote with the run none
		// the wiser, and leave it held until it expires.
		switch err := c.moveLock(context.WithoutCancel(ctx), current.hash, commit); {
		case err == nil:
			return &Lock{c: c, holder: opts.Holder, run: run, taken: now, ttl: opts.TTL, now: opts.Now, commit: commit, until: until}, nil
		case errors.Is(err, errLockMoved):
			// Someone else moved the lock in between: look again.
			continue
		default:
			return nil, err
		}
	}
}

// ErrLockFree says there was no lock to free.
var ErrLockFree = errors.New("the repository lock is not held")

// Unlock frees a lock whose holder is gone, as `terraform force-unlock`
// does. A lock that has not expired is refused unless force is set: its
// holder may still be applying. It returns what the lock said.
func (c *Checkout) Unlock(ctx context.Context, force bool, now time.Time) (*HeldError, error) {
	for {
		current, err := c.readLock(ctx)
		if err != nil {
			return nil, err
		}
		info := &HeldError{Holder: current.holder, Run: current.run, Taken: current.taken, Until: current.until, Now: now}
		if current.hash == plumbing.ZeroHash || current.released {
			return nil, ErrLockFree
		}
		if current.held(now) && !force {
			return info, fmt.Errorf("%s. A lock that has not expired is freed only with --force: pass it if you are sure its holder is not running", info.describe())
		}
		commit, err := c.lockCommit(current.hash, fmt.Sprintf("%s\n\nreleased-by: gpufleet unlock\nrun: %s\n", lockTitle, current.run), now)
		if err != nil {
			return nil, err
		}
		switch err := c.moveLock(ctx, current.hash, commit); {
		case err == nil:
			return info, nil
		case errors.Is(err, errLockMoved):
			continue
		default:
			return nil, err
		}
	}
}

// heldMessage is what a lock commit says while the lock is held.
func heldMessage(holder, run string, taken, until time.Time) string {
	return fmt.Sprintf("%s\n\nholder: %s\nrun: %s\ntaken: %s\nuntil: %s\n", lockTitle, holder, run,
		taken.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
}

// renew moves the lock's expiry a TTL past now, if the lock is still this
// holder's: errLockMoved says another took it over.
func (l *Lock) renew(ctx context.Context) error {
	l.c.gitMu.Lock()
	defer l.c.gitMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	until := lockUntil(now, l.ttl)
	commit, err := l.c.lockCommit(l.commit, heldMessage(l.holder, l.run, l.taken, until), now)
	if err != nil {
		return err
	}
	if err := l.c.moveLock(ctx, l.commit, commit); err != nil {
		return err
	}
	l.commit, l.until = commit, until
	return nil
}

// Keep renews the lock every quarter of its TTL until stop is called, so
// that a run may last longer than the TTL while one that dies frees the
// lock soon. If the lock is lost — another reconciler took it over, or no
// renewal got through and it is about to expire — lost is told why, once,
// and renewing stops: the run no longer holds the repository, and must
// call no cloud from then on.
func (l *Lock) Keep(lost func(error)) (stop func()) {
	ticker := time.NewTicker(l.ttl / 4)
	stopKeeping := l.keep(ticker.C, time.After, lost)
	return func() {
		stopKeeping()
		ticker.Stop()
	}
}

// keep is Keep renewing at each tick, and giving up when after says the
// time to stop has come. A renewal, once its push starts, is seen through,
// as the taking of the lock is: cut short, it could move the lock on the
// remote with the holder none the wiser, and its next renewal would read
// as a takeover. The holder gives up at stopAt, a margin before the
// expiry, by a timer of its own rather than at the next tick, which could
// come a quarter of the TTL after the expiry: a call it started just
// before then has time to land before another reconciler looks at the
// clouds.
func (l *Lock) keep(ticks <-chan time.Time, after func(time.Duration) <-chan time.Time, lost func(error)) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var renewing chan error
		var failed error
		deadline := after(l.stopAt().Sub(l.now()))
		giveUp := func() {
			if failed == nil {
				failed = errors.New("the last renewal had not got through")
			}
			lost(fmt.Errorf("the repository lock could not be renewed before it expires at %s, %w", l.expiry().Format(time.RFC3339), failed))
		}
		for {
			select {
			case <-done:
				return
			case err := <-renewing:
				renewing = nil
				if errors.Is(err, errLockMoved) {
					lost(errors.New("another reconciler took the repository lock over: this run held it past its expiry"))
					return
				}
				failed = err
				if err == nil {
					deadline = after(l.stopAt().Sub(l.now()))
				}
			case <-deadline:
				if now := l.now(); now.Before(l.stopAt()) {
					// The clock says it is not time yet (it was set back).
					deadline = after(l.stopAt().Sub(now))
					continue
				}
				giveUp()
				return
			case <-ticks:
				if !l.now().Before(l.stopAt()) {
					giveUp()
					return
				}
				if renewing == nil {
					renewing = make(chan error, 1)
					go func(result chan<- error) { result <- l.renew(context.Background()) }(renewing)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// stopAt is when a holder that has not renewed its lock gives it up.
func (l *Lock) stopAt() time.Time {
	return l.expiry().Add(-l.ttl / 10)
}

func (l *Lock) expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Release frees the lock. If another reconciler took it over after it
// expired, that one's lock is left alone.
func (l *Lock) Release(ctx context.Context) error {
	l.c.gitMu.Lock()
	defer l.c.gitMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	commit, err := l.c.lockCommit(l.commit, fmt.Sprintf("%s\n\nreleased-by: %s\nrun: %s\n", lockTitle, l.holder, l.run), l.now())
	if err != nil {
		return err
	}
	if err := l.c.moveLock(ctx, l.commit, commit); err != nil && !errors.Is(err, errLockMoved) {
		return fmt.Errorf("releasing the repository lock, %w", err)
	}
	return nil
}

var errLockMoved = errors.New("the lock moved")

// readLock returns the lock's current commit and what it says.
func (c *Checkout) readLock(ctx context.Context) (lockState, error) {
	ref := lockRef
	if c.Remote {
		err := c.Repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName,
			RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", lockRef, seenLock))},
			Auth:       c.auth,
			Depth:      1,
			Tags:       git.NoTags,
		})
		switch {
		case err == nil || errors.Is(err, git.NoErrAlreadyUpToDate):
		case isMissingRef(err):
			return lockState{}, nil
		default:
			return lockState{}, fmt.Errorf("reading the repository lock, %w", err)
		}
		ref = seenLock
	}
	r, err := c.Repo.Reference(ref, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return lockState{}, nil
	}
	if err != nil {
		return lockState{}, err
	}
	commit, err := c.Repo.CommitObject(r.Hash())
	if err != nil {
		return lockState{}, fmt.Errorf("reading the repository lock, %w", err)
	}
	st := lockState{hash: r.Hash()}
	for _, line := range strings.Split(commit.Message, "\n") {
		key, value, _ := strings.Cut(line, ": ")
		switch key {
		case "holder":
			st.holder = value
		case "run":
			st.run = value
		case "taken":
			st.taken, _ = time.Parse(time.RFC3339, value)
		case "until":
			st.until, _ = time.Parse(time.RFC3339, value)
		case "released-by":
			st.released = true
		}
	}
	return st, nil
}

func isMissingRef(err error) bool {
	var noMatch git.NoMatchingRefSpecError
	return errors.As(err, &noMatch) || strings.Contains(err.Error(), "couldn't find remote ref")
}

// lockCommit writes a commit with an empty tree on top of parent.
func (c *Checkout) lockCommit(parent plumbing.Hash, msg string, now time.Time) (plumbing.Hash, error) {
	storer := c.Repo.Storer
	tree := &object.Tree{}
	treeObj := storer.NewEncodedObject()
	if err := tree.Encode(treeObj); err != nil {
		return plumbing.ZeroHash, err
	}
	treeHash, err := storer.SetEncodedObject(treeObj)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "gpufleet", Email: "gpufleet@localhost", When: now}
	commit := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash}
	if parent != plumbing.ZeroHash {
		commit.ParentHashes = []plumbing.Hash{parent}
	}
	obj := storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return storer.SetEncodedObject(obj)
}

// moveLock points the lock at commit if it still points at old.
func (c *Checkout) moveLock(ctx context.Context, old, commit plumbing.Hash) error {
	if !c.Remote {
		var oldRef *plumbing.Reference
		if old != plumbing.ZeroHash {
			oldRef = plumbing.NewHashReference(lockRef, old)
		}
		err := c.Repo.Storer.CheckAndSetReference(plumbing.NewHashReference(lockRef, commit), oldRef)
		if err != nil {
			if old == plumbing.ZeroHash {
				// Created meanwhile by someone else.
				if _, rerr := c.Repo.Reference(lockRef, false); rerr == nil {
					return errLockMoved
				}
			}
			if strings.Contains(err.Error(), "reference has changed") {
				return errLockMoved
			}
			return err
		}
		return nil
	}
	local := plumbing.ReferenceName("refs/gpufleet/my-lock")
	if err := c.Repo.Storer.SetReference(plumbing.NewHashReference(local, commit)); err != nil {
		return err
	}
	err := c.Repo.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", local, lockRef))},
		Auth:       c.auth,
	})
	if err == nil {
		return nil
	}
	// A lock moved since we read it shows up as a rejected push, or, when
	// the client checks fast-forward itself, as a commit it has never seen.
	if isRejected(err) || errors.Is(err, plumbing.ErrObjectNotFound) {
		return errLockMoved
	}
	return fmt.Errorf("taking the repository lock, %w", err)
}

// isRejected reports whether a push failed because the remote ref moved.
func isRejected(err error) bool {
	if errors.Is(err, git.ErrNonFastForwardUpdate) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "stale info", "failed to update ref", "cannot lock ref", "rejected"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// newRunID names one taking of the lock. Two reconcilers on hosts of the
// same name, both PID 1 in their containers, still get different ids.
func newRunID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
