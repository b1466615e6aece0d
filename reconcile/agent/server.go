// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"encoding/json"
	"net/http"
)

// Handler serves the agent's endpoints:
//
//	POST /webhook/github  GitHub push events (when a secret is set)
//	POST /trigger         a signed request for a run (when a secret is set)
//	GET  /metrics         Prometheus metrics
//	GET  /healthz         the process is alive
//	GET  /readyz          every repository's latest run loaded its specs
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]string{"status": "alive"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		readiness := a.Ready()
		code := http.StatusOK
		if !readiness.Ready {
			code = http.StatusServiceUnavailable
		}
		reply(w, code, readiness)
	})
	if len(a.opts.Secret) > 0 {
		mux.HandleFunc("POST /webhook/github", a.githubWebhook)
		mux.HandleFunc("POST /trigger", a.signedTrigger)
	}
	return mux
}

// reply answers with a small JSON document.
func reply(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

func replyError(w http.ResponseWriter, code int, msg string) {
	reply(w, code, map[string]string{"error": msg})
}
