// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"cmp"
	"context"
	"os"

	"github.com/gpufleet/gpufleet/reconcile/notify"
	"github.com/gpufleet/gpufleet/schema/redact"
)

// notify tells, as the specs ask, how the run ended. Specs that do not
// load name nobody to tell, so such a run tells no one; a locked run did
// nothing to tell of. A failure to deliver is logged: it never fails the
// run it is about.
func (r *run) notify(ctx context.Context, runErr error) {
	if r.opts.Notifier == nil || r.repo == nil || r.repo.Config.Notifications == nil {
		return
	}
	// The commit that made the specs, not the head: status commits, a
	// failed run's included, move the head but change nothing to tell.
	ev := notify.Event{Repository: r.repositoryName(), Revision: cmp.Or(r.specCommit(), r.result.Revision), At: r.now}
	// Nodes, as every summary of the run counts them: a try on a pool
	// that ran dry, made good in a later round, is no failure.
	c := r.result.Counts
	ev.Created, ev.Deleted, ev.Failed, ev.Replaced, ev.FailedCalls = c.Created, c.Deleted, c.FailedNodes, c.Replaced, c.FailedCalls
	if r.report != nil {
		ev.CostMicros = r.report.Plan.NowMicros
	}
	if !r.result.Commit.IsZero() {
		ev.Commit = r.result.Commit.String()
	}
	switch OutcomeOf(&r.result, runErr) {
	case Locked:
		return
	case Failed:
		ev.Kind = notify.Failed
		ev.Reasons = []string{notify.Scrub(r.secrets.String(runErr.Error()))}
	case NotConverged:
		ev.Kind = notify.NotConverged
		for _, why := range r.result.NotConverged {
			ev.Reasons = append(ev.Reasons, notify.Scrub(r.secrets.String(why)))
		}
	default:
		if len(r.result.Applied) > 0 {
			ev.Kind = notify.Changed
		}
	}
	if ev.Kind != "" {
		r.log.Debug("telling of the run", "kind", ev.Kind)
	}
	if err := r.opts.Notifier.Notify(ctx, r.repo.Config.Notifications, ev); err != nil {
		r.log.Warn("could not tell of the run", "err", err)
	}
	r.notifyDrift(ctx)
}

// repositoryName is the repository as events name it: its URL without
// credentials, or its directory.
func (r *run) repositoryName() string {
	if r.c.URL != "" {
		return redact.URL(r.c.URL)
	}
	return r.c.Dir
}

// maskNotificationSecrets adds what the notifications read from the
// environment — the destinations' URLs, which are secrets, and the
// signing key — to what the run masks, whatever the variables are named.
func (r *run) maskNotificationSecrets() {
	n := r.repo.Config.Notifications
	if n == nil {
		return
	}
	if n.Slack != nil {
		r.secrets.Add(os.Getenv(n.Slack.URLEnv))
	}
	if n.Webhook != nil {
		r.secrets.Add(os.Getenv(n.Webhook.URLEnv))
		r.secrets.Add(os.Getenv(n.Webhook.SecretEnv))
	}
}
