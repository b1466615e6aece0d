// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Lifecycle states, in the API's words.
const (
	StateProvisioning = "PROVISIONING"
	StateRunning      = "RUNNING"
	StateStarting     = "STARTING"
	StateStopping     = "STOPPING"
	StateStopped      = "STOPPED"
	StateTerminating  = "TERMINATING"
	StateTerminated   = "TERMINATED"
)

var lifecycleStates = []string{StateProvisioning, StateRunning, StateStarting, StateStopping, StateStopped, StateTerminating, StateTerminated}

// lifecycleState renders the world's state: pending is provisioning until
// the world's launch time has passed, shutting down is terminating for its
// operation time. A state OCI has no word for (an Azure VM's failed) reads
// as terminated, which is what OCI makes of a launch that fails late.
func lifecycleState(s sim.State) string {
	switch s {
	case sim.StatePending:
		return StateProvisioning
	case sim.StateRunning:
		return StateRunning
	case sim.StateStopping:
		return StateStopping
	case sim.StateStopped:
		return StateStopped
	case sim.StateShuttingDown:
		return StateTerminating
	}
	return StateTerminated
}

// Properties the world keeps for the front to echo back. A launch's
// user_data is not among them: it holds bootstrap secrets the world's
// state file has no business keeping, so the API's echo of the metadata
// leaves it out.
const (
	propDisplayName = "displayName"
	propImage       = "imageId"
	// propSubnet is the launch's subnet, kept with the rest of its
	// request; OCI shows it on the instance's VNIC, not the instance.
	propSubnet = "subnetId"
	// propMetadata prefixes each metadata key kept.
	propMetadata = "metadata."
)

// userDataKey is the metadata key of a launch's cloud-init user data.
const userDataKey = "user_data"

// instance is an instance as the API renders it.
type instance struct {
	ID                 string                    `json:"id"`
	AvailabilityDomain string                    `json:"availabilityDomain"`
	CompartmentID      string                    `json:"compartmentId"`
	DisplayName        string                    `json:"displayName,omitempty"`
	FaultDomain        string                    `json:"faultDomain"`
	FreeformTags       map[string]string         `json:"freeformTags"`
	DefinedTags        map[string]map[string]any `json:"definedTags"`
	ImageID            string                    `json:"imageId,omitempty"`
	LifecycleState     string                    `json:"lifecycleState"`
	Metadata           map[string]string         `json:"metadata"`
	Region             string                    `json:"region"`
	Shape              string                    `json:"shape"`
	ShapeConfig        shapeConfig               `json:"shapeConfig"`
	SourceDetails      *sourceDetails            `json:"sourceDetails,omitempty"`
	TimeCreated        string                    `json:"timeCreated"`
}

type shapeConfig struct {
	Ocpus          float64 `json:"ocpus"`
	Vcpus          int     `json:"vcpus"`
	MemoryInGBs    float64 `json:"memoryInGBs"`
	Gpus           int     `json:"gpus"`
	GpuDescription string  `json:"gpuDescription,omitempty"`
}

// sourceDetails is what an instance boots from: an image, the one source
// the front launches from.
type sourceDetails struct {
	SourceType string `json:"sourceType"`
	ImageID    string `json:"imageId,omitempty"`
}

// timeFormat is how OCI writes times: RFC 3339 in UTC, to the millisecond.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// render is an instance as the API shows it. Its fault domain is one of
// the availability domain's three, from its place in the world's order,
// so that it is the same on every run.
func (s *Server) render(inst *sim.Instance) instance {
	typ, _ := s.world.TypeNamed(cloud, inst.InstanceType)
	out := instance{
		ID:                 inst.ID,
		AvailabilityDomain: adName(inst.Zone),
		CompartmentID:      inst.Scope,
		DisplayName:        inst.Properties[propDisplayName],
		FaultDomain:        fmt.Sprintf("FAULT-DOMAIN-%d", inst.Seq%3+1),
		FreeformTags:       inst.Tags,
		DefinedTags:        map[string]map[string]any{},
		ImageID:            inst.Properties[propImage],
		LifecycleState:     lifecycleState(inst.State),
		Metadata:           map[string]string{},
		Region:             inst.Region,
		Shape:              inst.InstanceType,
		ShapeConfig: shapeConfig{Ocpus: ocpus(typ), Vcpus: typ.VCPUs, MemoryInGBs: typ.MemoryGiB, Gpus: typ.GPUs,
			GpuDescription: gpuDescription(typ)},
		TimeCreated: inst.LaunchedAt.UTC().Format(timeFormat),
	}
	if out.FreeformTags == nil {
		out.FreeformTags = map[string]string{}
	}
	if out.ImageID != "" {
		out.SourceDetails = &sourceDetails{SourceType: sourceImage, ImageID: out.ImageID}
	}
	for k, v := range inst.Properties {
		if key, ok := strings.CutPrefix(k, propMetadata); ok && key != userDataKey {
			out.Metadata[key] = v
		}
	}
	return out
}

// writeInstance answers an instance with its etag, a digest of what it
// shows, so that the etag changes whenever the instance does.
func writeInstance(w http.ResponseWriter, inst instance) error {
	body, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("marshalling instance %s, %w", inst.ID, err)
	}
	sum := sha256.Sum256(body)
	w.Header().Set("etag", hex.EncodeToString(sum[:16]))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// lookup finds a visible instance by id in a region: each region's API
// knows its own instances only.
func (s *Server) lookup(id, region string) (*sim.Instance, bool) {
	inst, ok := s.world.Get(id)
	if !ok || inst.Cloud != cloud || inst.Region != region {
		return nil, false
	}
	return inst, true
}

// getInstance serves GET /instances/{instanceId}.
func (s *Server) getInstance(w http.ResponseWriter, req *request) error {
	call := sim.Call{Op: OpGetInstance}
	if inst, ok := s.lookup(req.args[0], req.region); ok {
		call.Zone, call.InstanceType = inst.Zone, inst.InstanceType
	}
	if err := s.intercept(req, call); err != nil {
		return err
	}
	inst, ok := s.lookup(req.args[0], req.region)
	if !ok {
		return errNotFound()
	}
	return writeInstance(w, s.render(inst))
}

// instanceKey is where an instance sorts in a list, and what a page token
// of ListInstances holds.
type instanceKey struct {
	Seq  uint64 `json:"seq"`
	Name string `json:"name,omitempty"`
}

// instanceOrder is the order ListInstances sorts by: by time created or
// display name, each way. Time created is the world's launch order; ties
// of name are broken by it, in the same direction.
func instanceOrder(sortBy, sortOrder string) (func(a, b instanceKey) int, error) {
	sortBy, sortOrder = strings.ToUpper(cmp.Or(sortBy, "TIMECREATED")), strings.ToUpper(sortOrder)
	if sortOrder == "" {
		// OCI's defaults: newest first, and names from A.
		sortOrder = map[string]string{"TIMECREATED": "DESC", "DISPLAYNAME": "ASC"}[sortBy]
	}
	var order func(a, b instanceKey) int
	switch sortBy {
	case "TIMECREATED":
		order = func(a, b instanceKey) int { return cmp.Compare(a.Seq, b.Seq) }
	case "DISPLAYNAME":
		order = func(a, b instanceKey) int { return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Seq, b.Seq)) }
	default:
		return nil, errInvalid("sortBy", fmt.Sprintf("%q is neither TIMECREATED nor DISPLAYNAME.", sortBy))
	}
	switch sortOrder {
	case "ASC":
		return order, nil
	case "DESC":
		return func(a, b instanceKey) int { return order(b, a) }, nil
	}
	return nil, errInvalid("sortOrder", fmt.Sprintf("%q is neither ASC nor DESC.", sortOrder))
}

// listInstances serves GET /instances: the region's instances in a
// compartment, filtered by availability domain, display name and state,
// sorted and paged.
func (s *Server) listInstances(w http.ResponseWriter, req *request) error {
	q := req.URL.Query()
	call := sim.Call{Op: OpListInstances}
	zone, zoneOK := s.zoneOf(req.region, q.Get("availabilityDomain"))
	if zoneOK {
		call.Zone = zone
	}
	if err := s.intercept(req, call); err != nil {
		return err
	}
	compartment := q.Get("compartmentId")
	if compartment == "" {
		return errMissing("compartmentId")
	}
	if ad := q.Get("availabilityDomain"); ad != "" && !zoneOK {
		return errInvalid("availabilityDomain", fmt.Sprintf("%s is not an availability domain of %s.", ad, req.region))
	}
	state := strings.ToUpper(q.Get("lifecycleState"))
	if state != "" && !slices.Contains(lifecycleStates, state) {
		return errInvalid("lifecycleState", fmt.Sprintf("%q is not a lifecycle state.", q.Get("lifecycleState")))
	}
	order, err := instanceOrder(q.Get("sortBy"), q.Get("sortOrder"))
	if err != nil {
		return err
	}
	name, named := q.Get("displayName"), q.Has("displayName")
	type listed struct {
		key  instanceKey
		inst instance
	}
	var items []listed
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == req.region && inst.Scope == compartment && (!zoneOK || inst.Zone == zone)
	}) {
		r := s.render(inst)
		if named && r.DisplayName != name || state != "" && r.LifecycleState != state {
			continue
		}
		items = append(items, listed{instanceKey{Seq: inst.Seq, Name: r.DisplayName}, r})
	}
	slices.SortFunc(items, func(a, b listed) int { return order(a.key, b.key) })
	page, next, err := paginate(q, items, func(l listed) instanceKey { return l.key }, order)
	if err != nil {
		return err
	}
	out := make([]instance, len(page))
	for i, l := range page {
		out[i] = l.inst
	}
	return writeList(w, out, next)
}

// terminateInstance serves DELETE /instances/{instanceId}: the instance is
// terminating for the world's operation time and then no longer listed. A
// terminate of one already terminating is answered as the first was.
func (s *Server) terminateInstance(w http.ResponseWriter, req *request) error {
	call := sim.Call{Op: OpTerminateInstance}
	inst, found := s.lookup(req.args[0], req.region)
	if found {
		call.Zone, call.InstanceType = inst.Zone, inst.InstanceType
	}
	if err := s.intercept(req, call); err != nil {
		return err
	}
	if !found {
		return errNotFound()
	}
	if inst.State != sim.StateShuttingDown && inst.State != sim.StateTerminated {
		if _, err := s.world.StartDelete(inst.ID, "", nil); err != nil {
			// Ended between the look and the delete: gone already.
			return errNotFound()
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
