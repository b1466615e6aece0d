// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// insert serves instances.insert: it validates the resource, consults the
// faults and launches the instance as an "insert" operation. Stock-outs and
// quota are reported on the operation, as GCE does, unless a fault asks for
// the synchronous reason.
func (s *Server) insert(w http.ResponseWriter, r *http.Request, project, zone string) error {
	requestID, idErr := requestIDOf(r)
	resource, bodyErr := readInstance(r)
	var spec sim.LaunchSpec
	var typ sim.InstanceType
	invalid := cmp.Or(idErr, bodyErr)
	if invalid == nil {
		spec, typ, invalid = s.launchSpec(linksOf(r), project, zone, resource)
	}
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Type: typ, Spot: spec.Market == catalog.Spot,
		Permission: permissions[OpInsert], Resource: scope(project, zone) + "/instances/" + resource.GetName()}
	out, err := s.intercept(r.Context(), sim.Call{Op: OpInsert, Region: fc.Region, Zone: zone, InstanceType: spec.InstanceType})
	if err != nil {
		return err
	}
	if out.Err != nil && isSyncFault(out.Err) {
		return s.syncError(out.Err, fc)
	}
	if invalid != nil {
		return invalid
	}
	release, invalid := s.admitPolicies(linksOf(r), "resource", project, zone, spec.Properties)
	if invalid != nil {
		return invalid
	}
	defer release()
	spec.FailLater = s.operationFault(out, fc.Region, spec.InstanceType, spec.Market)
	if requestID != "" {
		// GCE ignores a repeated requestId and returns the first operation,
		// whatever the body says, so the world compares no parameters.
		spec.Token = sim.TokenKey(cloud, project, requestID)
	}
	res, err := s.world.Launch(spec)
	var werr *sim.Error
	if errors.As(err, &werr) {
		switch werr.Kind {
		case sim.KindAlreadyExists:
			return alreadyExists(scope(project, zone) + "/instances/" + spec.Name)
		case sim.KindUnknownZone:
			return notFound(scope(project, zone))
		case sim.KindUnknownType, sim.KindUnsupported:
			return unknownMachineType("resource.machineType", resource.GetMachineType(), spec.InstanceType, zone)
		}
		return s.syncError(werr, fc)
	}
	if err != nil {
		return err
	}
	if res.Operation == nil {
		// The requestId's operation has expired while its instance lives on.
		return alreadyExists(scope(project, zone) + "/instances/" + res.Instance.Name)
	}
	return s.writeOperation(w, r, res.Operation)
}

// interceptOn counts a call on one instance and applies its faults: an
// error to answer with, or what the call must carry on (a failure for its
// operation), after checking the target.
func (s *Server) interceptOn(r *http.Request, op, project, zone, name string) (sim.Outcome, error) {
	inst, _ := s.lookup(project, zone, name)
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Permission: permissions[op], Resource: scope(project, zone) + "/instances/" + name}
	call := sim.Call{Op: op, Region: fc.Region, Zone: zone}
	if inst != nil {
		call.InstanceType = inst.InstanceType
	}
	out, err := s.interceptSync(r, call, fc)
	if err != nil {
		return out, err
	}
	return out, s.checkTarget(project, zone, name)
}

// get serves instances.get, by name or by numeric id as GCE allows.
func (s *Server) get(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if _, err := s.interceptOn(r, OpGet, project, zone, name); err != nil {
		return err
	}
	// Look again: a preemption fault on this very call may have struck it.
	inst, ok := s.lookup(project, zone, name)
	if !ok {
		return notFound(scope(project, zone) + "/instances/" + name)
	}
	return writeProto(w, s.renderInstance(linksOf(r), inst))
}

// delete serves instances.delete as a "delete" operation; a repeated
// requestId returns the first deletion's operation, even once the instance
// is gone.
func (s *Server) delete(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	requestID, idErr := requestIDOf(r)
	out, err := s.interceptOn(r, OpDelete, project, zone, name)
	if err != nil {
		return err
	}
	if idErr != nil {
		return idErr
	}
	token := ""
	if requestID != "" {
		token = sim.TokenKey(cloud, project, requestID)
	}
	id := ""
	if inst, ok := s.lookup(project, zone, name); ok {
		id = inst.ID
	}
	op, err := s.world.StartDelete(id, token, out.FailLater)
	if err != nil {
		return notFound(scope(project, zone) + "/instances/" + name)
	}
	return s.writeOperation(w, r, op)
}

// checkTarget validates the zone and instance of a path.
func (s *Server) checkTarget(project, zone, name string) error {
	if err := s.zoneExists(project, zone); err != nil {
		return err
	}
	if !nameRE.MatchString(name) && !idRE.MatchString(name) {
		return invalidField("instance", name, "Must be a match of regex '"+nameOrIDPattern+"'")
	}
	return nil
}

// lookup finds a visible instance of a project's zone by name or id.
func (s *Server) lookup(project, zone, name string) (*sim.Instance, bool) {
	if idRE.MatchString(name) {
		inst, ok := s.world.Get(name)
		if !ok || inst.Cloud != cloud || inst.Scope != scope(project, zone) {
			return nil, false
		}
		return inst, true
	}
	return s.world.ByName(cloud, scope(project, zone), name)
}

// requestIDOf reads the optional requestId: GCE accepts only a non-zero
// UUID.
func requestIDOf(r *http.Request) (string, *apiError) {
	q := r.URL.Query()
	if !q.Has("requestId") {
		return "", nil
	}
	id := q.Get("requestId")
	if !validUUID(id) {
		return "", invalidField("requestId", id, "The request id must be a valid UUID with the exception that zero UUID is not supported (00000000-0000-0000-0000-000000000000).")
	}
	return id, nil
}

func validUUID(s string) bool {
	if len(s) != 36 || s == "00000000-0000-0000-0000-000000000000" {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// readInstance reads an Instance resource body strictly: GCE refuses
// fields it does not know.
func readInstance(r *http.Request) (*computepb.Instance, *apiError) {
	var inst computepb.Instance
	if err := readResource(r, &inst); err != nil {
		return nil, err
	}
	return &inst, nil
}

// readResource reads a request's resource body into m, strictly, and
// answers what GCE answers for a body it cannot take.
func readResource(r *http.Request, m proto.Message) *apiError {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: "Request payload size exceeds the limit: " + strconv.FormatInt(tooBig.Limit, 10) + " bytes."}
	case err != nil:
		return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: "Invalid JSON payload received. The request body could not be read."}
	case strings.TrimSpace(string(body)) == "":
		return requiredField("resource")
	}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, m); err != nil {
		msg := strings.TrimPrefix(err.Error(), "proto: ")
		return &apiError{Status: http.StatusBadRequest, Reason: "invalid", Message: "Invalid JSON payload received. " + msg}
	}
	return nil
}

// named is a resource an insert names in its body.
type named interface {
	proto.Message
	GetName() string
}

// readInsert reads an insert's request id and resource, and admits its
// call, which admit does knowing the name the resource gives itself. As
// GCE does, a bad request id or body, or a missing or malformed name, is
// answered only once the call is admitted.
func readInsert(r *http.Request, res named, admit func(name string) error) (requestID string, err error) {
	requestID, idErr := requestIDOf(r)
	bodyErr := readResource(r, res)
	if err := admit(res.GetName()); err != nil {
		return requestID, err
	}
	if err := cmp.Or(idErr, bodyErr); err != nil {
		return requestID, err
	}
	m := res.ProtoReflect()
	switch {
	case !m.Has(m.Descriptor().Fields().ByName("name")):
		return requestID, requiredField("resource.name")
	case !nameRE.MatchString(res.GetName()):
		return requestID, invalidField("resource.name", res.GetName(), "Must be a match of regex '"+namePattern+"'")
	}
	return requestID, nil
}

// machineTypeName reads the machine type forms GCE accepts: a full URL, a
// partial "projects/…/zones/…/machineTypes/…" or "zones/…/machineTypes/…",
// or a bare name. A type named for another project or zone is refused,
// though its name is still returned for the error message and for faults
// to match on.
func (l links) machineTypeName(value, project, zone string) (string, bool) {
	mt, ok := l.parseRef(value, ref{project: project, scope: "zones", location: zone, collection: "machineTypes"})
	if !ok {
		return value[strings.LastIndexByte(value, '/')+1:], false
	}
	return mt.name, mt.project == project && mt.location == zone
}

func unknownMachineType(field, value, name, zone string) *apiError {
	return invalidField(field, value, "Machine type with name '"+name+"' does not exist in zone '"+zone+"'.")
}

// Properties the world keeps for the front to echo back. References are
// kept as paths (see links).
const (
	propSourceImage       = "sourceImage"
	propDiskSizeGb        = "diskSizeGb"
	propDiskType          = "diskType"
	propNetwork           = "network"
	propSubnetwork        = "subnetwork"
	propProvisioningModel = "provisioningModel"
	propTerminationAction = "instanceTerminationAction"
	propAutomaticRestart  = "automaticRestart"
	propOnHostMaintenance = "onHostMaintenance"
	propPreemptible       = "preemptible"
	propAutoDelete        = "autoDelete"
	propDeviceName        = "deviceName"
	// The NIC's access config, when it has one: its name, and the
	// external address asked for, if any.
	propAccessConfig = "accessConfig"
	propNatIP        = "natIP"
	// The service account: its email and its scopes, space-separated.
	propServiceAccount = "serviceAccount"
	propScopes         = "scopes"
	// The resource policies the instance is in, by path, space-separated.
	propResourcePolicies = "resourcePolicies"
	// The subnetwork's range, which the instance's address is in.
	propSubnetRange = "subnetRange"
	// The boot disk's license, by path, when its image has one, and its
	// interface when one was asked for.
	propLicense       = "license"
	propDiskInterface = "diskInterface"
	// The network tags, space-separated.
	propTags = "tags"
)

// defaultDiskSizeGb is the boot disk size when none is asked for: the size
// of the images gpufleet boots, and the least a disk may be.
const defaultDiskSizeGb = 10

// launchSpec validates an insert's resource and turns it into what the
// world launches. It fills in the spec as far as it got, so that faults can
// still match on the instance type of a request that is then refused.
func (s *Server) launchSpec(l links, project, zone string, res *computepb.Instance) (sim.LaunchSpec, sim.InstanceType, *apiError) {
	spec := sim.LaunchSpec{Cloud: cloud, Zone: zone, Scope: scope(project, zone), Name: res.GetName(), Operation: sim.OperationInsert, AsyncCapacity: true, AsyncQuota: true}
	typeName, typeOK := l.machineTypeName(res.GetMachineType(), project, zone)
	spec.InstanceType = typeName

	if err := s.zoneExists(project, zone); err != nil {
		return spec, sim.InstanceType{}, err
	}
	if !nameRE.MatchString(spec.Name) {
		return spec, sim.InstanceType{}, invalidField("resource.name", spec.Name, "Must be a match of regex '"+namePattern+"'")
	}
	if res.MachineType == nil {
		return spec, sim.InstanceType{}, requiredField("resource.machineType")
	}
	return s.shapeSpec(l, spec, project, "resource", typeOK, false, res)
}

// instanceShape is what an instance is made of, as an Instance (insert)
// and InstanceProperties (bulkInsert) both carry it.
type instanceShape interface {
	GetMachineType() string
	GetGuestAccelerators() []*computepb.AcceleratorConfig
	GetTags() *computepb.Tags
	GetScheduling() *computepb.Scheduling
	GetDisks() []*computepb.AttachedDisk
	GetNetworkInterfaces() []*computepb.NetworkInterface
	GetLabels() map[string]string
	GetMetadata() *computepb.Metadata
	GetServiceAccounts() []*computepb.ServiceAccount
	GetResourcePolicies() []string
}

// shapeSpec validates an instance's machine type, scheduling, disks,
// network, metadata, service account and labels, whose fields are named
// under field, and fills them into spec, whose zone and instance type are
// set. typeOK says whether the machine type was named in a form the call
// accepts; bulk, whether the call is a bulkInsert, which names types
// without URLs.
func (s *Server) shapeSpec(l links, spec sim.LaunchSpec, project, field string, typeOK, bulk bool, res instanceShape) (sim.LaunchSpec, sim.InstanceType, *apiError) {
	zone := spec.Zone
	sch := res.GetScheduling()
	model := sch.GetProvisioningModel()
	if model != "" && model != "STANDARD" && model != "SPOT" {
		return spec, sim.InstanceType{}, invalidField(field+".scheduling.provisioningModel", model, "Must be one of [SPOT, STANDARD].")
	}
	spec.Market = catalog.OnDemand
	if model == "SPOT" || sch.GetPreemptible() {
		spec.Market = catalog.Spot
	}
	typ, ok := s.world.Type(cloud, zone, spec.InstanceType, spec.Market)
	if !typeOK || !ok {
		return spec, sim.InstanceType{}, unknownMachineType(field+".machineType", res.GetMachineType(), spec.InstanceType, zone)
	}

	if err := s.guestAccelerators(l, field, project, zone, typ, res.GetGuestAccelerators()); err != nil {
		return spec, typ, err
	}
	props, err := schedulingProps(field, sch, spec.Market, typ)
	if err != nil {
		return spec, typ, err
	}
	if err := diskProps(l, field, project, zone, typ.Name, bulk, res.GetDisks(), props); err != nil {
		return spec, typ, err
	}
	if len(res.GetNetworkInterfaces()) > 1 {
		// One NIC is all the emulator models; GCE would take up to one a
		// vCPU, to eight.
		return spec, typ, invalidField(field+".networkInterfaces", "", "The emulator supports one network interface per instance.")
	}
	nic := firstNIC(res.GetNetworkInterfaces())
	sub, err := s.nicNetwork(l, field, project, s.region(zone), nic)
	if err != nil {
		return spec, typ, err
	}
	props[propNetwork] = sub.Network
	props[propSubnetwork] = sub.path()
	props[propSubnetRange] = sub.Range
	if err := accessConfigProps(field, nic.GetAccessConfigs(), props); err != nil {
		return spec, typ, err
	}
	if items := res.GetTags().GetItems(); len(items) > 0 {
		if err := tagProps(field, items, props); err != nil {
			return spec, typ, err
		}
	}
	if err := metadataProps(field, res.GetMetadata(), props); err != nil {
		return spec, typ, err
	}
	if err := s.serviceAccountProps(field, project, res.GetServiceAccounts(), props); err != nil {
		return spec, typ, err
	}
	if err := validateLabels(field, res.GetLabels()); err != nil {
		return spec, typ, err
	}
	policies, err := s.policyRefs(l, field, project, zone, bulk, res.GetResourcePolicies())
	if err != nil {
		return spec, typ, err
	}
	if len(policies) > 0 {
		props[propResourcePolicies] = strings.Join(policies, " ")
	}
	spec.Tags = res.GetLabels()
	spec.Properties = props
	return spec, typ, nil
}

func schedulingProps(field string, sch *computepb.Scheduling, market catalog.Market, typ sim.InstanceType) (map[string]string, *apiError) {
	action := sch.GetInstanceTerminationAction()
	if action != "" && action != "STOP" && action != "DELETE" {
		return nil, invalidField(field+".scheduling.instanceTerminationAction", action, "Must be one of [DELETE, STOP].")
	}
	maintenance := sch.GetOnHostMaintenance()
	switch maintenance {
	case "", "TERMINATE":
	case "MIGRATE":
		if typ.GPUs > 0 {
			return nil, invalidField(field+".scheduling.onHostMaintenance", maintenance, "Instances with guest accelerators do not support live migration.")
		}
		if market == catalog.Spot {
			return nil, invalidField(field+".scheduling.onHostMaintenance", maintenance, "Scheduling must have preemptible be false when OnHostMaintenance isn't TERMINATE.")
		}
	default:
		return nil, invalidField(field+".scheduling.onHostMaintenance", maintenance, "Must be one of [MIGRATE, TERMINATE].")
	}
	restart := market != catalog.Spot
	if sch != nil && sch.AutomaticRestart != nil {
		restart = sch.GetAutomaticRestart()
		if restart && market == catalog.Spot {
			return nil, invalidField(field+".scheduling.automaticRestart", "true", "Scheduling must have preemptible be false when AutomaticRestart is true.")
		}
	}
	props := map[string]string{
		propProvisioningModel: cmp.Or(sch.GetProvisioningModel(), "STANDARD"),
		propAutomaticRestart:  strconv.FormatBool(restart),
		// GPU machine types cannot live-migrate, so GCE stops them for
		// host maintenance unless told otherwise.
		propOnHostMaintenance: cmp.Or(maintenance, "TERMINATE"),
	}
	if market == catalog.Spot {
		props[propTerminationAction] = cmp.Or(action, "STOP")
	} else if action != "" {
		props[propTerminationAction] = action
	}
	if sch != nil && sch.Preemptible != nil {
		props[propPreemptible] = strconv.FormatBool(sch.GetPreemptible())
	}
	return props, nil
}

func diskProps(l links, field, project, zone, machineType string, bulk bool, disks []*computepb.AttachedDisk, props map[string]string) *apiError {
	if len(disks) == 0 {
		return invalidField(field+".disks", "", "Boot disk must be specified.")
	}
	boot := disks[0]
	init := boot.GetInitializeParams()
	if init.GetSourceImage() == "" && init.GetSourceSnapshot() == "" && boot.GetSource() == "" {
		return invalidField(field+".disks[0]", "", "Boot disk must have a source image, snapshot or disk.")
	}
	if i := boot.GetInterface(); i != "" && i != "SCSI" && i != "NVME" {
		return invalidField(field+".disks[0].interface", i, "Must be one of [NVME, SCSI].")
	}
	source := cmp.Or(init.GetSourceSnapshot(), boot.GetSource())
	minSize := int64(defaultDiskSizeGb)
	if value := init.GetSourceImage(); value != "" {
		ir, ok := l.parseImageRef(value, project)
		if !ok {
			return invalidField(field+".disks[0].initializeParams.sourceImage", value, "The URL is malformed.")
		}
		img, found, err := resolveImage(ir)
		if err != nil {
			return err
		}
		source = ir.path()
		if found {
			source = img.path()
			minSize = img.diskSizeGb
			props[propLicense] = licensePath(img)
		}
	}
	size := cmp.Or(init.GetDiskSizeGb(), boot.GetDiskSizeGb())
	if size != 0 && size < minSize {
		return invalidField(field+".disks[0].initializeParams.diskSizeGb", strconv.FormatInt(size, 10),
			"Requested disk size cannot be smaller than the image size ("+strconv.FormatInt(minSize, 10)+" GB)")
	}
	diskType, err := bootDiskType(l, field, project, zone, machineType, bulk, init)
	if err != nil {
		return err
	}
	if rel, ok := l.relative(source); ok {
		source = rel
	}
	props[propSourceImage] = source
	props[propDiskSizeGb] = strconv.FormatInt(cmp.Or(size, minSize), 10)
	if i := boot.GetInterface(); i != "" {
		props[propDiskInterface] = i
	}
	props[propDiskType] = diskType
	// The API's default is to keep a disk when its instance goes.
	props[propAutoDelete] = strconv.FormatBool(boot.GetAutoDelete())
	if boot.GetDeviceName() != "" {
		props[propDeviceName] = boot.GetDeviceName()
	}
	return nil
}

// accessConfigProps validates the NIC's access configs: an instance gets
// an external IPv4 address only through one, and a NIC takes at most one,
// of type ONE_TO_ONE_NAT.
func accessConfigProps(field string, configs []*computepb.AccessConfig, props map[string]string) *apiError {
	f := field + ".networkInterfaces[0].accessConfigs"
	switch {
	case len(configs) == 0:
		return nil
	case len(configs) > 1:
		return invalidField(f, "", "At most one access config is supported per network interface.")
	}
	ac := configs[0]
	if t := ac.GetType(); t != "" && t != computepb.AccessConfig_ONE_TO_ONE_NAT.String() {
		return invalidField(f+"[0].type", t, "Must be one of [ONE_TO_ONE_NAT].")
	}
	// GCE's documented default name for the one access config.
	props[propAccessConfig] = cmp.Or(ac.GetName(), "External NAT")
	if ip := ac.GetNatIP(); ip != "" {
		props[propNatIP] = ip
	}
	return nil
}

// maxTags is how many network tags an instance may have.
const maxTags = 64

// tagProps validates the network tags, which firewall rules pick
// instances by: names of RFC 1035 form, 64 at most.
func tagProps(field string, items []string, props map[string]string) *apiError {
	if len(items) > maxTags {
		return invalidField(field+".tags.items", "", fmt.Sprintf("Instances can have at most %d tags.", maxTags))
	}
	for i, t := range items {
		if !nameRE.MatchString(t) {
			return invalidField(fmt.Sprintf("%s.tags.items[%d]", field, i), t, "Must be a match of regex '"+namePattern+"'")
		}
	}
	props[propTags] = strings.Join(items, " ")
	return nil
}

// serviceAccountProps validates the service account the instance runs as:
// one at most, "default" (or no email) being the project's Compute Engine
// default service account, any other one the world's account must hold.
func (s *Server) serviceAccountProps(field, project string, accounts []*computepb.ServiceAccount, props map[string]string) *apiError {
	switch {
	case len(accounts) == 0:
		return nil
	case len(accounts) > 1:
		return invalidField(field+".serviceAccounts", "", "Only one service account per VM instance is supported.")
	}
	sa := accounts[0]
	email := sa.GetEmail()
	if email == "" || email == "default" {
		email = defaultServiceAccount(project)
	}
	if !strings.Contains(email, "@") {
		return invalidField(field+".serviceAccounts[0].email", email, "The service account email is not valid.")
	}
	if email != defaultServiceAccount(project) && !s.world.HasServiceAccount(email) {
		return invalidField(field+".serviceAccounts[0].email", email, fmt.Sprintf("Service account %s does not exist.", email))
	}
	for i, scope := range sa.GetScopes() {
		if scope == "" || strings.ContainsAny(scope, " \t\n") {
			return invalidField(fmt.Sprintf("%s.serviceAccounts[0].scopes[%d]", field, i), scope, "The scope is not valid.")
		}
	}
	props[propServiceAccount] = email
	props[propScopes] = strings.Join(sa.GetScopes(), " ")
	return nil
}

func firstNIC(nics []*computepb.NetworkInterface) *computepb.NetworkInterface {
	if len(nics) == 0 {
		return nil
	}
	return nics[0]
}

// operationFault is the error a create's operation ends with: a stock-out
// or quota fault, or a fail-later one, strikes the operation rather than
// the request. Quota errors name their limit: the world's own carry it, a
// fault's is filled in here, as the operation outlives the request.
func (s *Server) operationFault(out sim.Outcome, region, instanceType string, market catalog.Market) *sim.Error {
	fail := cmp.Or(out.Err, out.FailLater)
	if fail == nil {
		return nil
	}
	f := *fail
	if f.Quota == "" {
		if q, ok := s.world.QuotaFor(cloud, region, instanceType, market); ok {
			f.Quota, f.Region, f.Limit = q.Name, q.Region, q.Limit
		}
	}
	return &f
}

// setLabels serves instances.setLabels. GCE replaces the labels only when
// the request's labelFingerprint is the one the instance has now: one
// read before somebody else changed them fails 412 conditionNotMet, and
// so does one that sends none, so a client cannot drop labels it never
// saw.
func (s *Server) setLabels(w http.ResponseWriter, r *http.Request, project, zone, name string) error {
	if _, err := s.interceptOn(r, OpSetLabels, project, zone, name); err != nil {
		return err
	}
	if _, err := requestIDOf(r); err != nil {
		return err
	}
	var req computepb.InstancesSetLabelsRequest
	if err := readResource(r, &req); err != nil {
		return err
	}
	if err := validateLabels("labels", req.GetLabels()); err != nil {
		return err
	}
	inst, ok := s.lookup(project, zone, name)
	if !ok {
		return notFound(scope(project, zone) + "/instances/" + name)
	}
	op, err := s.world.SetLabels(inst.ID, req.GetLabels(), func(current map[string]string) error {
		if req.GetLabelFingerprint() != fingerprint(current) {
			return errLabelFingerprint()
		}
		return nil
	})
	var apiErr *apiError
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case err != nil:
		return notFound(scope(project, zone) + "/instances/" + name)
	}
	return s.writeOperation(w, r, op)
}

func errLabelFingerprint() *apiError {
	return &apiError{Status: http.StatusPreconditionFailed, Reason: "conditionNotMet",
		Message: "Labels fingerprint either invalid or resource labels have changed"}
}
