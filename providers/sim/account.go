// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// AWSAccountID is the account the emulated AWS is: the owner of what it
// creates and the account in the ARNs it names.
const AWSAccountID = "123456789012"

// Account is what the emulated clouds' accounts hold besides instances
// and networks: the identities a launch may give its nodes, the
// parameters a launch may name its image by, and what the caller is not
// allowed to do. The clouds check launches against it as they check them
// against IAM, so a node that names an identity nobody created fails here
// as it would in an account. A new world's account is a new account's:
// no instance profiles, no user-assigned identities, only each GCE
// project's default compute service account (the GCE front's to accept),
// and AWS's public SSM parameters (the EC2 front's to resolve).
type Account struct {
	// InstanceProfiles are the EC2 instance profiles, by name; a launch
	// may name one by its name or by its ARN,
	// arn:aws:iam::<AWSAccountID>:instance-profile/<name>.
	InstanceProfiles []string `json:"instanceProfiles,omitempty"`
	// Identities are the Azure user-assigned identities, by resource id
	// (/subscriptions/S/resourceGroups/G/providers/
	// Microsoft.ManagedIdentity/userAssignedIdentities/N), compared as ARM
	// compares ids: without regard to case.
	Identities []string `json:"identities,omitempty"`
	// ServiceAccounts are the GCE service accounts, by email, beyond each
	// project's default compute service account.
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
	// SSMParameters maps the name of an SSM parameter the account created
	// to the image id it holds, for a launch's resolve:ssm: image.
	SSMParameters map[string]string `json:"ssmParameters,omitempty"`
	// Denied lists the operations the caller's role may not call, as
	// "cloud:Operation" ("aws:RunInstances", "azure:virtualMachines/write",
	// "gcp:compute.instances.insert"); each front answers them with its
	// cloud's authorization error.
	Denied []string `json:"denied,omitempty"`
}

// validate checks an account's entries are well formed.
func (a Account) validate() error {
	for _, p := range a.InstanceProfiles {
		if p == "" || strings.ContainsAny(p, ":/") {
			return fmt.Errorf("instance profile %q: want a name, not an ARN or path", p)
		}
	}
	for _, id := range a.Identities {
		if !strings.Contains(strings.ToLower(id), "/providers/microsoft.managedidentity/userassignedidentities/") {
			return fmt.Errorf("identity %q: want the resource id of a user-assigned identity", id)
		}
	}
	for _, e := range a.ServiceAccounts {
		if !strings.Contains(e, "@") {
			return fmt.Errorf("service account %q: want an email", e)
		}
	}
	for name, v := range a.SSMParameters {
		if !strings.HasPrefix(name, "/") && strings.Contains(name, "/") {
			return fmt.Errorf("SSM parameter %q: a hierarchical name starts with /", name)
		}
		if v == "" {
			return fmt.Errorf("SSM parameter %q holds nothing", name)
		}
	}
	for _, d := range a.Denied {
		cloud, op, ok := strings.Cut(d, ":")
		if !ok || op == "" || !slices.Contains([]string{"aws", "azure", "gcp"}, cloud) {
			return fmt.Errorf("denied %q: want cloud:Operation, cloud one of aws, azure, gcp", d)
		}
	}
	return nil
}

func (a Account) empty() bool {
	return len(a.InstanceProfiles)+len(a.Identities)+len(a.ServiceAccounts)+len(a.SSMParameters)+len(a.Denied) == 0
}

// clone copies an account so that neither copy shares slices or maps.
func (a Account) clone() Account {
	return Account{
		InstanceProfiles: slices.Clone(a.InstanceProfiles),
		Identities:       slices.Clone(a.Identities),
		ServiceAccounts:  slices.Clone(a.ServiceAccounts),
		SSMParameters:    maps.Clone(a.SSMParameters),
		Denied:           slices.Clone(a.Denied),
	}
}

// SetAccount replaces what the world's accounts hold: what `sim serve
// --account` declares on every start.
func (w *World) SetAccount(a Account) error {
	if err := a.validate(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.account = a.clone()
	w.changed()
	return nil
}

// Account returns a copy of what the world's accounts hold.
func (w *World) Account() Account {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.account.clone()
}

// HasInstanceProfile reports whether the EC2 account has an instance
// profile of that name, or of that ARN.
func (w *World) HasInstanceProfile(nameOrARN string) bool {
	name := nameOrARN
	if rest, ok := strings.CutPrefix(nameOrARN, "arn:aws:iam::"+AWSAccountID+":instance-profile/"); ok {
		// A profile's ARN holds its path; the name is its last part.
		name = rest[strings.LastIndex(rest, "/")+1:]
	} else if strings.HasPrefix(nameOrARN, "arn:") {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.account.InstanceProfiles, name)
}

// HasIdentity reports whether the Azure subscription has the user-assigned
// identity of that resource id.
func (w *World) HasIdentity(resourceID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.account.Identities, func(id string) bool { return strings.EqualFold(id, resourceID) })
}

// HasServiceAccount reports whether the GCE project has the service
// account of that email, other than its default compute one.
func (w *World) HasServiceAccount(email string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.account.ServiceAccounts, email)
}

// SSMParameter returns the value of an SSM parameter the account created.
func (w *World) SSMParameter(name string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.account.SSMParameters[name]
	return v, ok
}

// Denied reports whether the caller may not call a cloud's operation.
func (w *World) Denied(cloud, operation string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.account.Denied, cloud+":"+operation)
}

// LoadAccount reads an account file, the JSON form of Account, refusing
// fields it does not know.
func LoadAccount(path string) (Account, error) {
	var a Account
	if err := decodeFile(path, &a); err != nil {
		return Account{}, err
	}
	if err := a.validate(); err != nil {
		return Account{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}
