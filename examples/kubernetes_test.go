// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"os/exec"
	"strings"
	"testing"
)

// The Kubernetes examples build with kustomize as kubectl has it: the
// single agent, and the three replicas that shard the repositories, with
// their headless Service and disruption budget and without the Deployment.
func TestKubernetesExamplesBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	for dir, want := range map[string][]string{
		"kubernetes":    {"kind: Deployment", "kind: Service\n", "kind: ServiceAccount"},
		"kubernetes-ha": {"kind: StatefulSet", "kind: PodDisruptionBudget", "clusterIP: None", "GPUFLEET_REPLICAS", "serviceName: gpufleet-replicas"},
	} {
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s lacks %q", dir, w)
			}
		}
		if dir == "kubernetes-ha" && strings.Contains(string(out), "kind: Deployment") {
			t.Error("the replicas' kustomization still holds the Deployment")
		}
	}
}
