// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What an account holds answers the fronts' questions, the way each cloud
// names it, and outlives a restart.
func TestAccountHoldsIdentities(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	w, _ := newWorld(t, Config{StatePath: path})
	if w.HasInstanceProfile("gpu-node") || w.HasServiceAccount("nodes@p.iam.gserviceaccount.com") {
		t.Fatal("a new account has identities")
	}
	id := "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/nodes"
	if err := w.SetAccount(Account{
		InstanceProfiles: []string{"gpu-node"},
		Identities:       []string{id},
		ServiceAccounts:  []string{"nodes@p.iam.gserviceaccount.com"},
		SSMParameters:    map[string]string{"/team/gpu-ami": "ami-0abcdef1234567890"},
		Denied:           []string{"aws:StopInstances"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	w, _ = newWorld(t, Config{StatePath: path})
	for name, ok := range map[string]bool{
		"gpu-node": true,
		"arn:aws:iam::" + AWSAccountID + ":instance-profile/gpu-node":      true,
		"arn:aws:iam::" + AWSAccountID + ":instance-profile/team/gpu-node": true,
		"arn:aws:iam::999999999999:instance-profile/gpu-node":              false,
		"other": false,
	} {
		if w.HasInstanceProfile(name) != ok {
			t.Errorf("HasInstanceProfile(%q) = %v", name, !ok)
		}
	}
	if !w.HasIdentity(strings.ToLower(id)) || w.HasIdentity(id+"2") {
		t.Error("identities are not compared as ARM compares ids")
	}
	if v, ok := w.SSMParameter("/team/gpu-ami"); !ok || v != "ami-0abcdef1234567890" {
		t.Errorf("SSM parameter: %q %v", v, ok)
	}
	if !w.Denied("aws", "StopInstances") || w.Denied("aws", "RunInstances") || w.Denied("gcp", "StopInstances") {
		t.Error("Denied answers for the wrong cloud or operation")
	}
}

func TestAccountFileMistakes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{`{"instanceProfiles": ["arn:aws:iam::123456789012:instance-profile/x"]}`, "want a name"},
		{`{"identities": ["/subscriptions/s/resourceGroups/g"]}`, "user-assigned identity"},
		{`{"serviceAccounts": ["nodes"]}`, "want an email"},
		{`{"denied": ["ec2:RunInstances"]}`, "want cloud:Operation"},
		{"{\n\"instanceProfile\": []}", `a.json:2: json: unknown field "instanceProfile"`},
	} {
		path := filepath.Join(dir, "a.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadAccount(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("account file %s: %v, want %q", c.body, err, c.want)
		}
	}
}
