// SPDX-License-Identifier: Apache-2.0

package reconcile

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/schema"
)

// UnsetSecretsError is a run's refusal to launch anything while a node it
// would launch has a bootstrap whose secrets are not set: each launch
// would fail on its own, once per node, and half a rollout is worse than
// none. It names the secrets and the workloads, never a value.
type UnsetSecretsError struct {
	Secrets []UnsetSecret
}

// UnsetSecret is one secret and the workloads whose new nodes need it.
type UnsetSecret struct {
	Name string `json:"name"`
	// Workloads are "fleet/workload", sorted, with how many nodes of each
	// the run would launch.
	Workloads []string `json:"workloads"`
	Nodes     []int    `json:"nodes"`
}

func (e *UnsetSecretsError) Error() string {
	return "refusing to launch any node: " + describeUnset(e.Secrets) + "; nothing was launched or deleted"
}

// describeUnset says which secrets are not set, how to set them and who
// needs them.
func describeUnset(secrets []UnsetSecret) string {
	var parts []string
	for _, s := range secrets {
		var users []string
		for i, w := range s.Workloads {
			users = append(users, fmt.Sprintf("%s (%s)", w, plural(s.Nodes[i], "node")))
		}
		parts = append(parts, fmt.Sprintf("secret %s is not set (export %s%s of at least 8 bytes), needed by %s",
			s.Name, schema.SecretEnvPrefix, s.Name, strings.Join(users, ", ")))
	}
	return strings.Join(parts, "; ")
}

// unsetSecrets finds the secrets the creates need that lookup lacks, by
// name, in name order.
func unsetSecrets(repo *schema.Repo, actions []planner.Action, lookup func(string) (string, bool)) []UnsetSecret {
	type use struct{ secret, workload string }
	nodes := map[use]int{}
	for _, a := range actions {
		if a.Kind != planner.Create {
			continue
		}
		f, ok := repo.Fleet(a.Fleet)
		if !ok {
			continue
		}
		for wi := range f.Workloads {
			w := &f.Workloads[wi]
			if w.Name != a.Workload {
				continue
			}
			if b := repo.Config.BootstrapFor(w, a.Offer.Cloud); b != nil {
				for _, name := range b.UnsetSecrets(lookup) {
					nodes[use{name, a.Fleet + "/" + a.Workload}]++
				}
			}
		}
	}
	bySecret := map[string]*UnsetSecret{}
	for _, u := range slices.SortedFunc(maps.Keys(nodes), func(a, b use) int {
		return strings.Compare(a.secret+"\x00"+a.workload, b.secret+"\x00"+b.workload)
	}) {
		s := bySecret[u.secret]
		if s == nil {
			s = &UnsetSecret{Name: u.secret}
			bySecret[u.secret] = s
		}
		s.Workloads = append(s.Workloads, u.workload)
		s.Nodes = append(s.Nodes, nodes[u])
	}
	var out []UnsetSecret
	for _, name := range slices.Sorted(maps.Keys(bySecret)) {
		out = append(out, *bySecret[name])
	}
	return out
}

// envSecret reads a bootstrap secret as a launch does.
func envSecret(name string) (string, bool) {
	return os.LookupEnv(schema.SecretEnvPrefix + name)
}

// secretsWarning is what a plan says of the secrets its creates need and
// this environment lacks: the apply that launches them needs them set.
func secretsWarning(repo *schema.Repo, actions []planner.Action, lookup func(string) (string, bool)) string {
	unset := unsetSecrets(repo, actions, lookup)
	if len(unset) == 0 {
		return ""
	}
	return "the apply of this plan launches nothing until its bootstrap secrets are set where it runs: " + describeUnset(unset)
}

// checkSecrets refuses a run whose creates need secrets that are not set,
// before it launches anything.
func (r *run) checkSecrets() error {
	if unset := unsetSecrets(r.repo, r.report.Changes.Actions, envSecret); len(unset) > 0 {
		return &UnsetSecretsError{Secrets: unset}
	}
	return nil
}
