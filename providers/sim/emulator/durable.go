// SPDX-License-Identifier: Apache-2.0

package emulator

import (
	"bytes"
	"cmp"
	"log/slog"
	"maps"
	"net/http"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// durable holds each answer of a front until the world it reflects is in
// the state file, so that whatever a client was told — an instance made, a
// fault spent — survives the emulator being killed a moment later. A
// request that finds nothing unsaved, as reads mostly do, costs two atomic
// loads; requests that finish while a save runs share the next one.
//
// The answer is buffered, not held back at its first write, because a
// front may write headers before it is done with the world.
func durable(world *sim.World, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held := &heldResponse{header: http.Header{}}
		next.ServeHTTP(held, r)
		if err := world.Sync(); err != nil {
			log.Error("saving emulator state before answering", "method", r.Method, "path", r.URL.Path, "err", err)
			// The change is made but may not survive a crash, so the
			// client must not take it as done; clouds' clients retry a
			// 503, and their idempotency tokens make the retry safe.
			http.Error(w, "the emulator could not save its state", http.StatusServiceUnavailable)
			return
		}
		held.send(w)
	})
}

// heldResponse is an http.ResponseWriter that keeps the answer until send.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(p)
}

func (h *heldResponse) send(w http.ResponseWriter) {
	maps.Copy(w.Header(), h.header)
	w.WriteHeader(cmp.Or(h.status, http.StatusOK))
	w.Write(h.body.Bytes())
}
