// SPDX-License-Identifier: Apache-2.0

package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Kinds of events, as gpufleet.cue's notifications.on names them.
const (
	Changed      = "changed"
	Failed       = "failed"
	NotConverged = "not-converged"
	// Drifted tells that a run found the clouds other than the status
	// committed before it: once per change, not once per run.
	Drifted = "drifted"
)

// Event is what a run did, as it is told: nothing of a spec's secrets, a
// bootstrap or a credential.
type Event struct {
	FormatVersion int       `json:"formatVersion"`
	Kind          string    `json:"kind"`
	Repository    string    `json:"repository"`
	Revision      string    `json:"revision"`
	At            time.Time `json:"at"`
	Created       int       `json:"created"`
	Deleted       int       `json:"deleted"`
	// Failed counts the nodes the run meant to create or delete that are
	// not done at its end, because of an error; Replaced the created nodes
	// placed again after their pool ran out, and FailedCalls the cloud
	// calls that returned an error.
	Failed      int   `json:"failed"`
	Replaced    int   `json:"replaced,omitempty"`
	FailedCalls int   `json:"failedCalls,omitempty"`
	CostMicros  int64 `json:"costMicros"`
	// Commit is the status commit the run made, if any.
	Commit string `json:"commit,omitempty"`
	// Reasons say why a run failed or did not converge.
	Reasons []string `json:"reasons,omitempty"`
}

// ID names an event by what it says, so the same failure repeated by run
// after run is one event; the time and the counts of a failed run's
// attempts do not count.
func (e Event) ID() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", e.Kind, e.Repository, e.Revision)
	if e.Kind == Changed {
		fmt.Fprintf(h, "%s\n", e.Commit)
	}
	for _, r := range e.Reasons {
		fmt.Fprintf(h, "%s\n", r)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Text is the event in a line or a few, for people.
func (e Event) Text() string {
	rev := e.Revision[:min(len(e.Revision), 12)]
	var b strings.Builder
	switch e.Kind {
	case Changed:
		fmt.Fprintf(&b, "gpufleet reconciled %s at %s: %d created, %d deleted, %d failed nodes; now %s/h", e.Repository, rev, e.Created, e.Deleted, e.Failed, catalog.Money(e.CostMicros))
	case Failed:
		fmt.Fprintf(&b, "gpufleet could not reconcile %s at %s", e.Repository, rev)
	case Drifted:
		fmt.Fprintf(&b, "gpufleet found the clouds of %s drifted from the committed status at %s", e.Repository, rev)
	default:
		fmt.Fprintf(&b, "gpufleet reconciled %s at %s, but the clouds still differ from the specs (%d created, %d deleted, %d failed nodes)", e.Repository, rev, e.Created, e.Deleted, e.Failed)
	}
	for _, r := range e.Reasons[:min(len(e.Reasons), 10)] {
		b.WriteString("\n• " + r)
	}
	if n := len(e.Reasons) - 10; n > 0 {
		fmt.Fprintf(&b, "\n• … and %d more", n)
	}
	return b.String()
}

// userinfo finds the user part of URLs, which may hold a token.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// Scrub hides what in a message might be a credential: the user part of a
// URL, and any value of the secrets given.
func Scrub(s string, secrets ...string) string {
	s = userinfo.ReplaceAllString(s, "${1}***@")
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "***")
		}
	}
	return s
}
