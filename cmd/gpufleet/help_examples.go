// SPDX-License-Identifier: Apache-2.0

package main

import "github.com/spf13/cobra"

// helpExamples are the Examples: of each command's help, by command path.
var helpExamples = map[string]string{
	"gpufleet validate": `  gpufleet validate --repo fleets
  gpufleet validate -o json`,
	"gpufleet plan": `  gpufleet plan --repo fleets
  gpufleet plan --repo fleets -out plan.json          # then: gpufleet apply plan.json
  gpufleet plan --repo . --base "$BASE_SHA" -o markdown --detailed-exitcode
  gpufleet plan --fleet inference --observed observed.json -o json`,
	"gpufleet apply": `  gpufleet apply plan.json --repo fleets
  gpufleet apply --repo fleets --sim                  # plan and apply a local checkout`,
	"gpufleet reconcile": `  gpufleet reconcile --repo https://github.com/acme/fleets.git
  gpufleet reconcile --repo fleets --sim --dry-run
  gpufleet reconcile --repo fleets --fleet batch -o json`,
	"gpufleet unlock": `  gpufleet unlock --repo https://github.com/acme/fleets.git
  gpufleet unlock --repo fleets --force`,
	"gpufleet serve": `  GPUFLEET_WEBHOOK_SECRET=… gpufleet serve --repo https://github.com/acme/fleets.git --interval 5m
  gpufleet serve --repo fleets --sim --listen 127.0.0.1:8080`,
	"gpufleet capacity": `  gpufleet capacity --repo fleets
  gpufleet capacity --repo fleets --sim -o json`,
	"gpufleet demo": `  gpufleet demo
  gpufleet demo --dir /tmp/gpufleet-demo --reset`,
	"gpufleet comment github": `  GITHUB_TOKEN=… gpufleet comment github --pr 42 --repo-slug acme/fleets --file plan.md`,
	"gpufleet catalog refresh": `  gpufleet catalog refresh
  gpufleet catalog refresh --cloud aws --regions us-east-1,us-west-2
  gpufleet catalog refresh --sim --catalog /tmp/catalog.json`,
	"gpufleet catalog show": `  gpufleet catalog show
  gpufleet catalog show --catalog /tmp/catalog.json -o json`,
	"gpufleet schema":        `  gpufleet schema > gpufleet.schema.cue`,
	"gpufleet schema vendor": `  gpufleet schema vendor --repo fleets && cue vet ./fleets/...`,
	"gpufleet sim serve": `  gpufleet sim serve --state /tmp/clouds.json
  gpufleet sim serve --tls --op-latency 2s --rate-limits limits.json`,
	"gpufleet sim inspect": `  gpufleet sim inspect --state /tmp/clouds.json -o json`,
	"gpufleet version": `  gpufleet version
  gpufleet --version`,
}

// addExamples gives each command its examples.
func addExamples(cmd *cobra.Command) {
	if ex, ok := helpExamples[cmd.CommandPath()]; ok && cmd.Example == "" {
		cmd.Example = ex
	}
	for _, c := range cmd.Commands() {
		addExamples(c)
	}
}
