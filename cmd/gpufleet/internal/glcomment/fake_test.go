// SPDX-License-Identifier: Apache-2.0

package glcomment

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/cmd/gpufleet/internal/glcomment/glfake"
)

// newFake serves a fake GitLab for a test; its API is at the URL returned.
func newFake(t *testing.T) (*glfake.Server, string) {
	f := glfake.New(testToken)
	f.MaxLength = MaxLength
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/api/v4"
}

// fastRetry keeps tests quick: a retry waits milliseconds, whatever the
// server asks.
var fastRetry = Retry{Max: 4, WaitMin: time.Millisecond, WaitMax: 20 * time.Millisecond}
