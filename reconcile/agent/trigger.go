// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// signedTrigger takes {"repo": "<url or owner/name>"} signed like a GitHub
// webhook but in X-Gpufleet-Signature, for CI jobs and scripts that want a
// run now.
func (a *Agent) signedTrigger(w http.ResponseWriter, r *http.Request) {
	if a.shuttingDown.Load() {
		replyError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	body, err := readSigned(w, r, a.opts.Secret, "X-Gpufleet-Signature", a.opts.MaxPayload)
	if err != nil {
		code := refuse(w, err)
		a.log.Warn("trigger refused", "status", code, "reason", err, "remote", r.RemoteAddr)
		return
	}
	var req struct {
		Repo string `json:"repo"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Repo == "" {
		replyError(w, http.StatusBadRequest, `the body must be {"repo": "<repository URL or owner/name>"}`)
		return
	}
	names := a.Trigger(req.Repo, "trigger")
	if len(names) == 0 {
		replyError(w, http.StatusNotFound, "no configured repository matches "+displayName(req.Repo))
		return
	}
	a.log.Info("trigger: run queued", "repos", names)
	reply(w, http.StatusAccepted, map[string]any{"result": "triggered", "repos": names})
}
