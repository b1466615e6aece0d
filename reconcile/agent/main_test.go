// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"os"
	"testing"

	"github.com/gpufleet/gpufleet/examples"
	"github.com/gpufleet/gpufleet/schema"
)

// TestMain gives the example's bootstrap secrets placeholder values, as
// the demo does: the example's nodes need them to launch.
func TestMain(m *testing.M) {
	examples.SetPlaceholderSecrets(schema.SecretEnvPrefix)
	os.Exit(m.Run())
}
