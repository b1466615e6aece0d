// SPDX-License-Identifier: Apache-2.0

package clienttest

import "testing"

func TestRequired(t *testing.T) {
	t.Setenv(RequireEnv, "awscli,python3-azure")
	for client, want := range map[string]bool{"awscli": true, "python3-azure": true, "gcloud": false, "aws": false} {
		if got := Required(client); got != want {
			t.Errorf("Required(%q) = %v, want %v", client, got, want)
		}
	}
	t.Setenv(RequireEnv, "")
	if Required("") || Required("awscli") {
		t.Error("an empty list requires something")
	}
}
