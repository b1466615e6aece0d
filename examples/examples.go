// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"embed"
	"os"
	"strings"
)

// FleetRepo is examples/fleet-repo.
//
//go:embed all:fleet-repo
var FleetRepo embed.FS

// Secrets are the secrets the example's bootstrap files use.
var Secrets = []string{"K8S_JOIN_TOKEN", "RAY_PASSWORD"}

// SetPlaceholderSecrets gives each of the example's secrets a placeholder
// value where the environment has none, under prefix (GPUFLEET_SECRET_),
// so the example's nodes can be launched with no secret set up, and
// returns the names it set.
func SetPlaceholderSecrets(prefix string) []string {
	var set []string
	for _, name := range Secrets {
		if _, ok := os.LookupEnv(prefix + name); !ok {
			os.Setenv(prefix+name, "placeholder-"+strings.ToLower(strings.ReplaceAll(name, "_", "-")))
			set = append(set, name)
		}
	}
	return set
}
