// SPDX-License-Identifier: Apache-2.0

package clienttest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// RequireEnv lists, comma-separated, the clients that must be installed:
// "awscli", "python3-azure", "gcloud", "moto".
const RequireEnv = "GPUFLEET_REQUIRE_CLIENTS"

// Missing ends a test whose client is not installed: it skips with how to
// install the client, or fails when RequireEnv names it.
func Missing(t testing.TB, client, install string) {
	t.Helper()
	if Required(client) {
		t.Fatalf("%s is not installed, and %s requires it: %s", client, RequireEnv, install)
	}
	t.Skipf("%s not installed: %s", client, install)
}

// Required reports whether RequireEnv names client.
func Required(client string) bool {
	return client != "" && slices.Contains(strings.Split(os.Getenv(RequireEnv), ","), client)
}
