// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
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

// sshKeys lists the account's keys in the order they were added.
func (s *Server) sshKeys() []sshKey {
	var out []sshKey
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

// seedSSHKey adds a key the account holds from the start under an id of
// its name's digest: starting a front draws nothing from the world's
// seeded source, so the ids a seed gives instances stay the same.
func (s *Server) seedSSHKey(name, publicKey string) sshKey {
	sum := sha256.Sum256([]byte(name))
	return s.putSSHKeyAs(hex.EncodeToString(sum[:16]), name, publicKey)
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
		return notFound("SSH key")
	}
	return writeData(w, struct{}{})
}
