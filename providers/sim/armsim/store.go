// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// What VMs reference — resource groups, virtual networks with their
// subnets, network interfaces — is kept in the world's resource store
// (sim.World.PutResource), so it survives a restart beside the VMs, under
// a lower-cased resource id: ARM compares ids case-insensitively, and
// answers with the casing a resource was created with, which the body
// keeps. Changes ARM accepts and finishes later (a network resource's PUT,
// any DELETE) are stored with the time they finish, and read as finished
// from then on: nothing needs to run when they do.

// Resource kinds of the world's store the front owns (sim.Resource.Kind).
const (
	kindGroup     = "resourceGroup"
	kindVNet      = "virtualNetwork"
	kindNIC       = "networkInterface"
	kindOperation = "operation"
)

// resourceStore serialises the front's changes to what it keeps in the
// world's store: a write holds it to read, check and write back; a VM PUT
// holds it for reading from the check of its references to its launch, so
// that nothing it names is deleted meanwhile.
type resourceStore struct {
	mu sync.RWMutex
}

// change is a PUT or DELETE that ARM accepted and has not finished: until
// Until the resource shows provisioningState Updating or Deleting, and the
// operation Op reports InProgress.
type change struct {
	Delete bool      `json:"delete,omitempty"`
	Op     string    `json:"op,omitempty"`
	Until  time.Time `json:"until"`
}

// running reports whether the change is still under way at now.
func (c *change) running(now time.Time) bool { return c != nil && now.Before(c.Until) }

// gone reports whether the change deleted its resource by now.
func (c *change) gone(now time.Time) bool { return c != nil && c.Delete && !now.Before(c.Until) }

// provisioning is ARM's provisioningState of a resource with this change
// at now; updating is the word the resource's provider uses while a PUT
// runs.
func (c *change) provisioning(now time.Time, updating string) string {
	switch {
	case !c.running(now):
		return "Succeeded"
	case c.Delete:
		return "Deleting"
	default:
		return updating
	}
}

// header is what every resource the front keeps has besides its
// properties.
type header struct {
	// ID is the resource id as the request that created the resource
	// spelled its names.
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Location string            `json:"location"`
	Tags     map[string]string `json:"tags,omitempty"`
	// GUID seeds resourceGuid and etags; it is fixed at creation.
	GUID   string  `json:"guid,omitempty"`
	Change *change `json:"change,omitempty"`
}

// key is the resource's store key.
func (h header) key() string { return strings.ToLower(h.ID) }

// load reads a resource of the front's from the world's store into v.
func (s *Server) load(kind, key string, v any) bool {
	r, ok := s.world.GetResource(cloud, kind, key)
	if !ok {
		return false
	}
	return json.Unmarshal(r.Body, v) == nil
}

// save writes a resource of the front's into the world's store.
func (s *Server) save(kind, key, region string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// The front's own types always marshal.
		panic(fmt.Sprintf("marshalling a %s, %v", kind, err))
	}
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kind, ID: key, Region: region, Body: body})
}

// guid derives a resource's GUID from its key and the world's time, the
// way the world derives its own ids: unique, and the same for the same
// seed and clock.
func (s *Server) guid(key string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", key, s.world.Now().UnixNano(), s.world.Rand(1<<30))))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// etag is the weak etag Network puts on a resource and its children,
// which changes with every accepted write.
func etag(guid string, c *change, created time.Time) string {
	at := created
	if c != nil {
		at = c.Until
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", guid, at.UnixNano())))
	b := sum[:16]
	return fmt.Sprintf(`W/"%x-%x-%x-%x-%x"`, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// armID is a resource id taken apart: the resource group, then a
// provider's namespace and the type and name of the resource, and of a
// child (a subnet) when there is one.
type armID struct {
	Subscription, ResourceGroup string
	Namespace                   string
	Type, Name                  string
	ChildType, Child            string
}

var idPattern = regexp.MustCompile(`(?i)^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/([^/]+)/([^/]+)/([^/]+)(?:/([^/]+)/([^/]+))?$`)

// parseID reads a resource id as ARM does: its fixed segments in any case.
func parseID(id string) (armID, bool) {
	m := idPattern.FindStringSubmatch(id)
	if m == nil {
		return armID{}, false
	}
	return armID{Subscription: m[1], ResourceGroup: m[2], Namespace: m[3], Type: m[4], Name: m[5], ChildType: m[6], Child: m[7]}, true
}

// is reports whether the id names a resource of a namespace and type
// (and child type, "" for none).
func (a armID) is(namespace, typ, child string) bool {
	return strings.EqualFold(a.Namespace, namespace) && strings.EqualFold(a.Type, typ) && strings.EqualFold(a.ChildType, child)
}

// parent is the id of the resource a child belongs to.
func (a armID) parent() armID {
	a.ChildType, a.Child = "", ""
	return a
}

// group is the resource group the id is in.
func (a armID) group() groupRef { return groupRef{a.Subscription, a.ResourceGroup} }

// key is how the id is stored: lower-cased.
func (a armID) key() string { return strings.ToLower(a.String()) }

// String spells the id with the casing ARM gives its fixed segments.
func (a armID) String() string {
	id := "/subscriptions/" + a.Subscription + "/resourceGroups/" + a.ResourceGroup + "/providers/" + a.Namespace + "/" + a.Type + "/" + a.Name
	if a.ChildType != "" {
		id += "/" + a.ChildType + "/" + a.Child
	}
	return id
}

// networkID names a Network resource of the given type in a group.
func networkID(g groupRef, typ, name string) armID {
	return armID{Subscription: g.Subscription, ResourceGroup: g.Name, Namespace: "Microsoft.Network", Type: typ, Name: name}
}

// inGroup keeps the stored resources whose key is in the group.
func inGroup(g groupRef) func(sim.Resource) bool {
	prefix := g.key() + "/"
	return func(r sim.Resource) bool { return strings.HasPrefix(r.ID, prefix) }
}
