// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// maxBulkCount is the most instances one bulkInsert may ask for: GCE
// documents up to 5,000 VMs per call.
const maxBulkCount = 5000

// maxPatternDigits is the longest run of '#' a namePattern may have.
const maxPatternDigits = 18

// bulkProps names the fields of a bulkInsert's instance properties in
// errors.
const bulkProps = "resource.instanceProperties"

// bulkInsert serves instances.bulkInsert: it validates the resource and
// its naming, consults the faults and launches as many instances alike as
// fit, at least minCount and at most count, under one "bulkInsert"
// operation. As for insert, a shortfall below minCount, of capacity or
// quota, fails the operation, and nothing is created.
func (s *Server) bulkInsert(w http.ResponseWriter, r *http.Request, project, zone string) error {
	requestID, idErr := requestIDOf(r)
	var resource computepb.BulkInsertInstanceResource
	bodyErr := readResource(r, &resource)
	op, err := s.launchBulk(r, project, zone, &resource, requestID, cmp.Or(idErr, bodyErr))
	if err != nil {
		return err
	}
	return s.writeOperation(w, r, op)
}

// launchBulk launches a bulkInsert's instances in a zone under one world
// operation, or answers why not; invalid is what reading the request
// found wrong, which faults on the call answer before.
func (s *Server) launchBulk(r *http.Request, project, zone string, resource *computepb.BulkInsertInstanceResource, requestID string, invalid *apiError) (*sim.Operation, error) {
	var spec sim.BatchSpec
	var typ sim.InstanceType
	if invalid == nil {
		spec, typ, invalid = s.batchSpec(linksOf(r), project, zone, resource)
	}
	fc := faultContext{Project: project, Zone: zone, Region: s.region(zone), Type: typ, Spot: spec.Market == catalog.Spot,
		Permission: permissions[OpBulkInsert], Resource: scope(project, zone) + "/instances"}
	out, err := s.intercept(r.Context(), sim.Call{Op: OpBulkInsert, Region: fc.Region, Zone: zone, InstanceType: spec.InstanceType})
	if err != nil {
		return nil, err
	}
	if out.Err != nil && isSyncFault(out.Err) {
		return nil, s.syncError(out.Err, fc)
	}
	if invalid != nil {
		return nil, invalid
	}
	release, invalid := s.admitPolicies(linksOf(r), bulkProps, project, zone, spec.Properties)
	if invalid != nil {
		return nil, invalid
	}
	defer release()
	spec.FailLater = s.operationFault(out, fc.Region, spec.InstanceType, spec.Market)
	if requestID != "" {
		// The same key as insert's, so a requestId names one request
		// whichever method it was sent with.
		spec.Token = sim.TokenKey(cloud, project, requestID)
	}
	res, err := s.world.LaunchBatch(spec)
	var werr *sim.Error
	if errors.As(err, &werr) {
		switch werr.Kind {
		case sim.KindAlreadyExists:
			return nil, alreadyExists(scope(project, zone) + "/instances/" + s.takenName(project, zone, spec.Names))
		case sim.KindUnknownZone:
			return nil, notFound(scope(project, zone))
		case sim.KindUnknownType, sim.KindUnsupported:
			return nil, unknownMachineType(bulkProps+".machineType", resource.GetInstanceProperties().GetMachineType(), spec.InstanceType, zone)
		}
		return nil, s.syncError(werr, fc)
	}
	if err != nil {
		return nil, err
	}
	if res.Operation == nil {
		// The requestId's operation has expired while its instances live on.
		return nil, alreadyExists(scope(project, zone) + "/instances/" + res.Instances[0].Name)
	}
	return res.Operation, nil
}

// takenName is the first of names that an instance of the zone has, which
// is what made the world refuse the batch.
func (s *Server) takenName(project, zone string, names []string) string {
	for _, name := range names {
		if _, ok := s.world.ByName(cloud, scope(project, zone), name); ok {
			return name
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// batchSpec validates a bulkInsert's resource and turns it into what the
// world launches. Like launchSpec, it fills in the spec as far as it got.
func (s *Server) batchSpec(l links, project, zone string, res *computepb.BulkInsertInstanceResource) (sim.BatchSpec, sim.InstanceType, *apiError) {
	spec := sim.BatchSpec{LaunchSpec: sim.LaunchSpec{Cloud: cloud, Zone: zone, Scope: scope(project, zone),
		Operation: sim.OperationBulkInsert, AsyncCapacity: true, AsyncQuota: true}}
	props := res.GetInstanceProperties()
	// The type is named for faults to match even when it is refused below.
	typeName, _ := l.machineTypeName(props.GetMachineType(), project, zone)
	spec.InstanceType = typeName

	if err := s.zoneExists(project, zone); err != nil {
		return spec, sim.InstanceType{}, err
	}
	count, minCount, err := bulkCounts(res)
	if err != nil {
		return spec, sim.InstanceType{}, err
	}
	names, err := s.bulkNames(project, zone, res, count)
	if err != nil {
		return spec, sim.InstanceType{}, err
	}
	if res.InstanceFlexibilityPolicy != nil {
		return spec, sim.InstanceType{}, invalidField("resource.instanceFlexibilityPolicy", "", "Instance flexibility policy is supported only for regional bulkInsert requests.")
	}
	if props == nil {
		if t := res.GetSourceInstanceTemplate(); t != "" {
			// The emulator keeps no instance templates, so every one is
			// missing.
			return spec, sim.InstanceType{}, notFound(templatePath(project, t))
		}
		return spec, sim.InstanceType{}, requiredField(bulkProps)
	}
	if props.MachineType == nil {
		return spec, sim.InstanceType{}, requiredField(bulkProps + ".machineType")
	}
	if mt := props.GetMachineType(); strings.Contains(mt, "/") {
		// The real API fails the operation with INTERNAL_ERROR; a clear
		// refusal serves callers better.
		return spec, sim.InstanceType{}, invalidField(bulkProps+".machineType", mt,
			"Bulk insert takes a machine type name, such as 'g2-standard-4', not a URL.")
	}
	launch, typ, err := s.shapeSpec(l, spec.LaunchSpec, project, bulkProps, true, true, props)
	spec.LaunchSpec = launch
	if err != nil {
		return spec, typ, err
	}
	if init := props.GetDisks()[0].GetInitializeParams(); init.GetSourceSnapshot() != "" && init.GetSourceImage() == "" {
		return spec, typ, invalidField(bulkProps+".disks[0].initializeParams.sourceSnapshot", init.GetSourceSnapshot(),
			"Bulk insert cannot create boot disks from snapshots; use an image.")
	}
	spec.Min, spec.Max, spec.Names = minCount, count, names
	return spec, typ, nil
}

// bulkCounts reads count and minCount, which defaults to count.
func bulkCounts(res *computepb.BulkInsertInstanceResource) (count, minCount int, err *apiError) {
	if res.Count == nil {
		return 0, 0, requiredField("resource.count")
	}
	n := res.GetCount()
	switch {
	case n < 1:
		return 0, 0, invalidField("resource.count", strconv.FormatInt(n, 10), "Must be greater than or equal to 1.")
	case n > maxBulkCount:
		return 0, 0, invalidField("resource.count", strconv.FormatInt(n, 10), fmt.Sprintf("Must be less than or equal to %d.", maxBulkCount))
	}
	m := n
	if res.MinCount != nil {
		m = res.GetMinCount()
		switch {
		case m < 1:
			return 0, 0, invalidField("resource.minCount", strconv.FormatInt(m, 10), "Must be greater than or equal to 1.")
		case m > n:
			return 0, 0, invalidField("resource.minCount", strconv.FormatInt(m, 10), fmt.Sprintf("Must be less than or equal to count (%d).", n))
		}
	}
	return int(n), int(m), nil
}

// bulkNames is the name of each instance the batch may launch, in launch
// order: the keys of perInstanceProperties, sorted so that the same
// request always creates the same names first, or count names from
// namePattern. One of the two must be given, and perInstanceProperties
// must name exactly count instances.
func (s *Server) bulkNames(project, zone string, res *computepb.BulkInsertInstanceResource, count int) ([]string, *apiError) {
	pattern, named := res.GetNamePattern(), res.GetPerInstanceProperties()
	switch {
	case pattern != "" && len(named) > 0:
		return nil, invalidField("resource.namePattern", pattern, "Exactly one of namePattern and perInstanceProperties must be set.")
	case pattern != "":
		return s.patternNames(project, zone, pattern, count)
	case len(named) == 0:
		return nil, &apiError{Status: http.StatusBadRequest, Reason: "required",
			Message: "Required field 'resource.namePattern' or 'resource.perInstanceProperties' not specified"}
	}
	names := slices.Sorted(maps.Keys(named))
	for _, name := range names {
		if !nameRE.MatchString(name) {
			return nil, invalidField("resource.perInstanceProperties", name, "Must be a match of regex '"+namePattern+"'")
		}
	}
	if len(names) != count {
		return nil, invalidField("resource.count", strconv.Itoa(count),
			fmt.Sprintf("Must equal the number of names in perInstanceProperties (%d) when namePattern is not set.", len(names)))
	}
	return names, nil
}

// patternNames generates count names from a pattern such as "train-####",
// numbered after the biggest number among the zone's instances whose
// names match it, from 1 when none does.
func (s *Server) patternNames(project, zone, pattern string, count int) ([]string, *apiError) {
	start := strings.Index(pattern, "#")
	if start < 0 {
		return nil, invalidField("resource.namePattern", pattern, "The name pattern must contain one continuous sequence of '#' placeholder characters.")
	}
	end := start
	for end < len(pattern) && pattern[end] == '#' {
		end++
	}
	prefix, suffix, width := pattern[:start], pattern[end:], end-start
	switch {
	case strings.Contains(suffix, "#"):
		return nil, invalidField("resource.namePattern", pattern, "The name pattern must contain one continuous sequence of '#' placeholder characters.")
	case width > maxPatternDigits:
		return nil, invalidField("resource.namePattern", pattern, fmt.Sprintf("The name pattern placeholder can contain up to %d characters.", maxPatternDigits))
	case !nameRE.MatchString(prefix + strings.Repeat("0", width) + suffix):
		return nil, invalidField("resource.namePattern", pattern, "The names it generates must be a match of regex '"+namePattern+"'")
	}
	var last uint64
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Scope == scope(project, zone) }) {
		digits, ok := strings.CutPrefix(inst.Name, prefix)
		if digits, ok2 := strings.CutSuffix(digits, suffix); ok && ok2 && len(digits) == width {
			if n, err := strconv.ParseUint(digits, 10, 64); err == nil {
				last = max(last, n)
			}
		}
	}
	room := uint64(1)
	for range width {
		room *= 10
	}
	room -= last + 1
	if uint64(count) > room {
		return nil, invalidField("resource.namePattern", pattern,
			fmt.Sprintf("The name pattern has room for %d more names after number %d, not %d.", room, last, count))
	}
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("%s%0*d%s", prefix, width, last+1+uint64(i), suffix)
	}
	return names, nil
}

// templatePath is the resource path of an instance template as GCE names
// it in errors, from any of the forms a request may give.
func templatePath(project, template string) string {
	rest, _ := (links{}).relative(template)
	switch {
	case strings.HasPrefix(rest, "projects/"):
		return rest
	case strings.HasPrefix(rest, "global/"), strings.HasPrefix(rest, "regions/"):
		return "projects/" + project + "/" + rest
	}
	return "projects/" + project + "/global/instanceTemplates/" + rest
}

// bulkStatus fills in what a bulkInsert operation carries beyond an
// insert's: it targets the zone's instances rather than one, groups the
// creates it stands for under an id, and counts per zone what it set out
// to create and what it created. The world creates a batch at once, so
// the counts are final once the operation is DONE: every instance asked
// for and not created failed, and none is ever rolled back.
func bulkStatus(l links, op *sim.Operation, out *computepb.Operation) {
	project := projectOf(op.Scope)
	out.TargetLink = proto.String(l.zone(project, op.Zone) + "/instances")
	out.TargetId = nil
	out.OperationGroupId = proto.String(groupID(op.ID))
	status := &computepb.BulkInsertOperationStatus{
		Status:                proto.String(computepb.BulkInsertOperationStatus_CREATING.String()),
		TargetVmCount:         proto.Int32(int32(op.Target)),
		CreatedVmCount:        proto.Int32(0),
		FailedToCreateVmCount: proto.Int32(0),
		DeletedVmCount:        proto.Int32(0),
	}
	if op.Done {
		created := len(op.Batch)
		status.Status = proto.String(computepb.BulkInsertOperationStatus_DONE.String())
		status.CreatedVmCount = proto.Int32(int32(created))
		status.FailedToCreateVmCount = proto.Int32(int32(op.Target - created))
	}
	out.InstancesBulkInsertOperationMetadata = &computepb.InstancesBulkInsertOperationMetadata{
		PerLocationStatus: map[string]*computepb.BulkInsertOperationStatus{"zones/" + op.Zone: status},
	}
}

// groupID derives an operation group's UUID from its operation's name, so
// that it is stable across reads and restarts.
func groupID(name string) string {
	h := sha256.Sum256([]byte("operation-group\x00" + name))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
