// SPDX-License-Identifier: Apache-2.0

package lambdasim

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Instance statuses, in the API's words.
const (
	StatusBooting     = "booting"
	StatusActive      = "active"
	StatusUnhealthy   = "unhealthy"
	StatusTerminating = "terminating"
	StatusTerminated  = "terminated"
)

// MaxNameLength is the longest name an instance may have.
const MaxNameLength = 64

// maxQuantity bounds one launch; the API takes a handful at a time, and
// the bound keeps a single request from holding the world for long.
const maxQuantity = 100

// Properties the world keeps for the front to echo back. A launch's user
// data is not among them: the API never returns it, and it holds secrets
// the world's state file has no business keeping.
const (
	propName   = "name"
	propSSHKey = "sshKey"
	propImage  = "imageFamily"
)

// instance is an instance as the API renders it.
type instance struct {
	ID              string       `json:"id"`
	Name            *string      `json:"name"`
	IP              string       `json:"ip,omitempty"`
	PrivateIP       string       `json:"private_ip,omitempty"`
	Status          string       `json:"status"`
	SSHKeyNames     []string     `json:"ssh_key_names"`
	FileSystemNames []string     `json:"file_system_names"`
	Region          region       `json:"region"`
	InstanceType    instanceType `json:"instance_type"`
	Hostname        string       `json:"hostname,omitempty"`
	IsReserved      bool         `json:"is_reserved"`
}

// status renders the world's state: pending is booting until the world's
// launch time has passed, shutting down is terminating for its operation
// time. The world has no unhealthy instance of its own; an instance in a
// state Lambda has no word for (stopped, failed) reads as one.
func status(s sim.State) string {
	switch s {
	case sim.StatePending:
		return StatusBooting
	case sim.StateRunning:
		return StatusActive
	case sim.StateShuttingDown:
		return StatusTerminating
	case sim.StateTerminated:
		return StatusTerminated
	}
	return StatusUnhealthy
}

// render is an instance as the API shows it. Its type is described even
// when /instance-types no longer lists it. An active instance has its
// addresses, made from its place in the world's order so that they are
// the same on every run.
func (s *Server) render(inst *sim.Instance) instance {
	out := instance{
		ID:              inst.ID,
		Status:          status(inst.State),
		SSHKeyNames:     []string{},
		FileSystemNames: []string{},
		Region:          s.types.region(inst.Region),
		InstanceType:    s.describe(inst.InstanceType),
	}
	if name, ok := inst.Properties[propName]; ok {
		out.Name = &name
	}
	if key := inst.Properties[propSSHKey]; key != "" {
		out.SSHKeyNames = []string{key}
	}
	if out.Status == StatusActive {
		n := inst.Seq
		out.PrivateIP = fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff)
		out.IP = fmt.Sprintf("100.%d.%d.%d", 64+n>>16&0x3f, n>>8&0xff, n&0xff)
		out.Hostname = strings.ReplaceAll(out.PrivateIP, ".", "-")
	}
	return out
}

// describe is the API's description of a type, also one the catalog has no
// on-demand price for.
func (s *Server) describe(name string) instanceType {
	if t, ok := s.types.types[name]; ok {
		return t
	}
	typ, _ := s.world.TypeNamed(cloud, name)
	return instanceType{Name: name, Description: name, GPUDescription: typ.GPUModel,
		Specs: specs{VCPUs: typ.VCPUs, MemoryGiB: typ.MemoryGiB, GPUs: typ.GPUs}}
}

// listInstances serves GET /instances: every instance of the account, in
// launch order, in one answer; the API has no paging.
func (s *Server) listInstances(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	if err := s.intercept(r.Context(), tenant, sim.Call{Op: OpList}); err != nil {
		return err
	}
	out := []instance{}
	for _, inst := range s.world.List(cloud, nil) {
		out = append(out, s.render(inst))
	}
	return writeData(w, out)
}

// lookup finds a visible instance of the account by id.
func (s *Server) lookup(id string) (*sim.Instance, bool) {
	inst, ok := s.world.Get(id)
	if !ok || inst.Cloud != cloud {
		return nil, false
	}
	return inst, true
}

// getInstance serves GET /instances/{id}.
func (s *Server) getInstance(w http.ResponseWriter, r *http.Request, tenant string, args []string) error {
	call := sim.Call{Op: OpGet}
	if inst, ok := s.lookup(args[0]); ok {
		call.Region, call.Zone, call.InstanceType = inst.Region, inst.Zone, inst.InstanceType
	}
	if err := s.intercept(r.Context(), tenant, call); err != nil {
		return err
	}
	inst, ok := s.lookup(args[0])
	if !ok {
		return notFound("instance")
	}
	return writeData(w, s.render(inst))
}

// launchRequest is the body of POST /instance-operations/launch.
type launchRequest struct {
	RegionName       string   `json:"region_name"`
	InstanceTypeName string   `json:"instance_type_name"`
	SSHKeyNames      []string `json:"ssh_key_names"`
	FileSystemNames  []string `json:"file_system_names"`
	Quantity         *int     `json:"quantity"`
	Name             *string  `json:"name"`
	Image            *image   `json:"image"`
	UserData         string   `json:"user_data"`
}

type image struct {
	Family string `json:"family,omitempty"`
	ID     string `json:"id,omitempty"`
}

// launch serves POST /instance-operations/launch: quantity instances of one
// type in one region, or none and an error. The API takes no idempotency
// token and no tags, so two identical launches make two instances; the
// name is only a label, which any number of instances may share.
func (s *Server) launch(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	var req launchRequest
	bodyErr := readBody(r, &req)
	lost, err := s.interceptLater(r.Context(), tenant, sim.Call{Op: OpLaunch, Region: req.RegionName, Zone: req.RegionName, InstanceType: req.InstanceTypeName})
	if err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	zone, quantity, err := s.checkLaunch(req)
	if err != nil {
		return err
	}
	if _, ok := s.world.Type(cloud, zone, req.InstanceTypeName, catalog.OnDemand); !ok {
		// The type exists, but not in this region: no room for it there.
		return errCapacity()
	}
	// All or nothing: refuse what the zone cannot hold whole, and take
	// back what was launched if the world refuses one part way.
	if s.world.Room(cloud, zone, req.InstanceTypeName, catalog.OnDemand) < quantity {
		return errCapacity()
	}
	props := map[string]string{propSSHKey: req.SSHKeyNames[0]}
	if req.Name != nil {
		props[propName] = *req.Name
	}
	if req.Image != nil {
		props[propImage] = cmp.Or(req.Image.Family, req.Image.ID)
	}
	ids := []string{}
	for range quantity {
		res, err := s.world.Launch(sim.LaunchSpec{Cloud: cloud, Zone: zone, InstanceType: req.InstanceTypeName, Market: catalog.OnDemand, Properties: props})
		if err != nil {
			for _, id := range ids {
				s.world.Remove(id)
			}
			var werr *sim.Error
			if errors.As(err, &werr) {
				return s.worldError(werr)
			}
			return err
		}
		ids = append(ids, res.Instance.ID)
	}
	if lost != nil {
		// Lambda reports every failure on the request, so a fail-later
		// fault is a launch whose answer is lost: the instances are made,
		// and the caller hears a server error. It is the hardest case for
		// a client without an idempotency token, which must find them by
		// name before it launches again.
		e := errUnknown()
		e.Message = "The launch did not complete; instances it started may exist."
		return e
	}
	return writeData(w, struct {
		InstanceIDs []string `json:"instance_ids"`
	}{ids})
}

// checkLaunch validates a launch as the API does, naming the field at
// fault, and returns the zone it launches in (the region's one zone) and
// how many instances it asks for.
func (s *Server) checkLaunch(req launchRequest) (string, int, error) {
	if req.RegionName == "" {
		return "", 0, invalidParameters("region_name", "A region is required.")
	}
	reg, ok := s.world.Region(cloud, req.RegionName)
	if !ok || len(reg.Zones) == 0 {
		return "", 0, invalidParameters("region_name", fmt.Sprintf("Region '%s' does not exist.", req.RegionName))
	}
	if req.InstanceTypeName == "" {
		return "", 0, invalidParameters("instance_type_name", "An instance type is required.")
	}
	if _, ok := s.types.types[req.InstanceTypeName]; !ok {
		return "", 0, invalidParameters("instance_type_name", fmt.Sprintf("Instance type '%s' does not exist.", req.InstanceTypeName))
	}
	if len(req.SSHKeyNames) != 1 {
		return "", 0, invalidParameters("ssh_key_names", fmt.Sprintf("Exactly one SSH key name is required, not %d.", len(req.SSHKeyNames)))
	}
	if _, ok := s.sshKeyNamed(req.SSHKeyNames[0]); !ok {
		return "", 0, invalidParameters("ssh_key_names", fmt.Sprintf("SSH key '%s' does not exist.", req.SSHKeyNames[0]))
	}
	if len(req.FileSystemNames) > 0 {
		// The emulated account has no file systems to attach.
		return "", 0, invalidParameters("file_system_names", fmt.Sprintf("File system '%s' does not exist.", req.FileSystemNames[0]))
	}
	quantity := 1
	if req.Quantity != nil {
		quantity = *req.Quantity
	}
	if quantity < 1 || quantity > maxQuantity {
		return "", 0, invalidParameters("quantity", fmt.Sprintf("Quantity must be between 1 and %d, not %d.", maxQuantity, quantity))
	}
	if req.Name != nil && len(*req.Name) > MaxNameLength {
		return "", 0, invalidParameters("name", fmt.Sprintf("A name may have at most %d characters, not %d.", MaxNameLength, len(*req.Name)))
	}
	if req.Image != nil && (req.Image.Family == "") == (req.Image.ID == "") {
		return "", 0, invalidParameters("image", "An image is named by its family or by its id, one of the two.")
	}
	return reg.Zones[0], quantity, nil
}

// terminateRequest is the body of POST /instance-operations/terminate.
type terminateRequest struct {
	InstanceIDs []string `json:"instance_ids"`
}

// terminate serves POST /instance-operations/terminate: every instance
// named, or, if one is unknown, none. Each is terminating for the world's
// operation time and then no longer listed.
func (s *Server) terminate(w http.ResponseWriter, r *http.Request, tenant string, _ []string) error {
	var req terminateRequest
	bodyErr := readBody(r, &req)
	call := sim.Call{Op: OpTerminate}
	if len(req.InstanceIDs) > 0 {
		if inst, ok := s.lookup(req.InstanceIDs[0]); ok {
			call.Region, call.Zone, call.InstanceType = inst.Region, inst.Zone, inst.InstanceType
		}
	}
	if err := s.intercept(r.Context(), tenant, call); err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	if len(req.InstanceIDs) == 0 {
		return invalidParameters("instance_ids", "At least one instance id is required.")
	}
	var found []*sim.Instance
	seen := map[string]bool{}
	for _, id := range req.InstanceIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		inst, ok := s.lookup(id)
		if !ok {
			return notFound("instance")
		}
		found = append(found, inst)
	}
	out := []instance{}
	for _, inst := range found {
		if inst.State != sim.StateShuttingDown && inst.State != sim.StateTerminated {
			if _, err := s.world.StartDelete(inst.ID, "", nil); err != nil {
				// Ended between the look and the delete: gone already.
				return notFound("instance")
			}
			inst.State = sim.StateShuttingDown
		}
		out = append(out, s.render(inst))
	}
	return writeData(w, struct {
		TerminatedInstances []instance `json:"terminated_instances"`
	}{out})
}
