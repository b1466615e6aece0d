// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// kindSSHKey is the world's resource kind of the account's SSH keys,
// which outlive a restart as instances do.
const kindSSHKey = "ssh-key"

// sshKey is an SSH key as the API shows it.
type sshKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
}

// keyBody is what the world keeps of a key beside its id.
type keyBody struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
}

// kindDeletedKey marks a key the account had from the start (Options.
// SSHKeys) as deleted.
const kindDeletedKey = "ssh-key-deleted"

// sshKeys lists the account's keys: those it had from the start, unless
// deleted, then those added, in the order they were added. The first are
// not kept in the world, so that starting a front changes nothing in it.
func (s *Server) sshKeys() []sshKey {
	var out []sshKey
	for _, k := range s.opts.SSHKeys {
		id := seededKeyID(k.Name)
		if _, gone := s.world.GetResource(cloud, kindDeletedKey, id); !gone {
			out = append(out, sshKey{ID: id, Name: k.Name, PublicKey: k.PublicKey})
		}
	}
	for _, r := range s.world.Resources(cloud, kindSSHKey, nil) {
		var b keyBody
		if json.Unmarshal(r.Body, &b) == nil {
			out = append(out, sshKey{ID: r.ID, Name: b.Name, PublicKey: b.PublicKey})
		}
	}
	return out
}

func (s *Server) sshKeyNamed(name string) (sshKey, bool) {
	for _, k := range s.sshKeys() {
		if k.Name == name {
			return k, true
		}
	}
	return sshKey{}, false
}

// putSSHKey adds a key under a new id of 32 hex digits, drawn from the
// world's seeded source.
func (s *Server) putSSHKey(name, publicKey string) sshKey {
	id := fmt.Sprintf("%08x%08x%08x%08x", s.world.Rand(1<<32), s.world.Rand(1<<32), s.world.Rand(1<<32), s.world.Rand(1<<32))
	return s.putSSHKeyAs(id, name, publicKey)
}

// seededKeyID is the id of a key the account holds from the start: its
// name's digest, so that starting a front draws nothing from the world's
// seeded source and the ids a seed gives instances stay the same.
func seededKeyID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

func (s *Server) putSSHKeyAs(id, name, publicKey string) sshKey {
	body, _ := json.Marshal(keyBody{Name: name, PublicKey: publicKey})
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindSSHKey, ID: id, Body: body})
	return sshKey{ID: id, Name: name, PublicKey: publicKey}
}

// listSSHKeys serves GET /ssh-keys.
func (s *Server) listSSHKeys(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	if err := s.intercept(r.Context(), tenant, sim.Call{Op: OpSSHKeys}); err != nil {
		return err
	}
	out := s.sshKeys()
	if out == nil {
		out = []sshKey{}
	}
	return writeData(w, out)
}

// addSSHKey serves POST /ssh-keys with a public key. (The API generates a
// key pair when none is given and returns its private half; the emulator
// asks for the public key instead.)
func (s *Server) addSSHKey(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	var req keyBody
	bodyErr := readBody(r, &req)
	if err := s.intercept(r.Context(), tenant, sim.Call{Op: OpAddSSHKey}); err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	switch {
	case strings.TrimSpace(req.Name) == "":
		return invalidParameters("name", "A name is required.")
	case len(req.Name) > MaxNameLength:
		return invalidParameters("name", fmt.Sprintf("A name may have at most %d characters, not %d.", MaxNameLength, len(req.Name)))
	case req.PublicKey == "":
		return invalidParameters("public_key", "The emulator needs the public key; it generates none.")
	case len(strings.Fields(req.PublicKey)) < 2:
		return invalidParameters("public_key", "A public key is its type and its base64 body, e.g. 'ssh-ed25519 AAAA…'.")
	}
	// One add at a time, so that two of one name cannot both find it free.
	s.keys.Lock()
	defer s.keys.Unlock()
	if _, ok := s.sshKeyNamed(req.Name); ok {
		return invalidParameters("name", fmt.Sprintf("An SSH key named '%s' already exists.", req.Name))
	}
	return writeData(w, s.putSSHKey(req.Name, req.PublicKey))
}

// deleteSSHKey serves DELETE /ssh-keys/{id}.
func (s *Server) deleteSSHKey(w http.ResponseWriter, r *http.Request, tenant string, args []string) error {
	if err := s.intercept(r.Context(), tenant, sim.Call{Op: OpDeleteSSHKey}); err != nil {
		return err
	}
	if !s.world.DeleteResource(cloud, kindSSHKey, args[0]) {
		seeded := slices.ContainsFunc(s.sshKeys(), func(k sshKey) bool { return k.ID == args[0] })
		if !seeded {
			return notFound("SSH key")
		}
		s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindDeletedKey, ID: args[0]})
	}
	return writeData(w, struct{}{})
}
