// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"errors"

	"github.com/gpufleet/gpufleet/reconcile/status"
)

// readStatus reads what the last run committed: each fleet's status and
// the repository state. A fleet's status that cannot be read is named, and
// written again from what the clouds run: nothing in it is lost that the
// run does not learn again. The repository state is another matter — the
// blocklist, the retired tokens and the preemptions already dealt with are
// nowhere else — so a run that cannot read it stops, and leaves the file
// as it is for a person to restore.
func (r *run) readStatus() error {
	previous, err := status.ReadFleets(r.root, r.statusDir())
	var corrupt *status.CorruptError
	switch {
	case errors.As(err, &corrupt):
		r.unreadable = corrupt.Files
		for _, f := range corrupt.Files {
			r.log.Warn("a status file cannot be read; the run writes the status of its fleet again from what the clouds run", "file", f.Path, "problem", f.Problem)
		}
	case err != nil:
		return err
	}
	r.previous = previous
	state, err := status.ReadState(r.root, r.statusDir())
	if err != nil {
		r.stateUnread = true
		return err
	}
	state.Prune(r.now)
	r.state = state
	return nil
}
