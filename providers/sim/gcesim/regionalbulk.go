// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// kindRegionalBulk is the world's resource kind of the records of the
// regional bulkInserts: which of the world's operations answer as a
// region's, and of which region.
const kindRegionalBulk = "regionalBulkInsert"

// regionalBulkRecord is the record of a regional bulkInsert.
type regionalBulkRecord struct {
	Project string `json:"project"`
}

// regionalBulkInsert serves regionInstances.bulkInsert, which gcloud's
// `instances bulk create --region` calls: GCE picks the zone. The front
// places the whole batch in one zone (the ANY_SINGLE_ZONE shape, which
// the default ANY may also give): the first of the region's zones, in
// name order, that the location policy does not deny and that sells the
// machine type. The operation is the region's; its metadata gives the
// zone's count, as GCE's does.
func (s *Server) regionalBulkInsert(w http.ResponseWriter, r *http.Request, project, region string) error {
	requestID, idErr := requestIDOf(r)
	var resource computepb.BulkInsertInstanceResource
	bodyErr := readResource(r, &resource)
	if _, ok := s.world.Region(cloud, region); !ok {
		return notFound(regionPath(project, region))
	}
	invalid := cmp.Or(idErr, bodyErr)
	zone, zoneErr := s.bulkZone(region, &resource)
	invalid = cmp.Or(invalid, zoneErr)
	if resource.InstanceFlexibilityPolicy != nil {
		invalid = cmp.Or(invalid, invalidField("resource.instanceFlexibilityPolicy", "", "Instance flexibility policies are not modelled by this emulator."))
	}
	op, err := s.launchBulk(r, project, zone, &resource, requestID, invalid)
	if err != nil {
		return err
	}
	// Its instances' inserts are the zone's operations, in its operation
	// group, where gcloud counts what was made.
	s.recordOperation(op)
	body, _ := json.Marshal(regionalBulkRecord{Project: project})
	s.world.PutResource(sim.Resource{Cloud: cloud, Kind: kindRegionalBulk, ID: op.ID, Region: region, Body: body})
	return writeProto(w, s.renderRegionalBulk(linksOf(r), op, region))
}

// bulkZone is the zone of a region a regional bulkInsert goes to. A
// location policy may deny zones (its keys are "zones/Z"); the shape
// BALANCED, which spreads a batch over zones, is refused as not modelled.
func (s *Server) bulkZone(region string, res *computepb.BulkInsertInstanceResource) (string, *apiError) {
	r, _ := s.world.Region(cloud, region)
	zones := slices.Sorted(slices.Values(r.Zones))
	policy := res.GetLocationPolicy()
	if shape := policy.GetTargetShape(); shape == computepb.LocationPolicy_BALANCED.String() {
		return zones[0], invalidField("resource.locationPolicy.targetShape", shape, "A batch spread over zones is not modelled by this emulator; use ANY_SINGLE_ZONE.")
	}
	denied := map[string]bool{}
	for key, loc := range policy.GetLocations() {
		zone, ok := strings.CutPrefix(key, "zones/")
		if !ok || !slices.Contains(zones, zone) {
			return zones[0], invalidField("resource.locationPolicy.locations", key, fmt.Sprintf("The zone is not in region '%s'.", region))
		}
		if loc.GetPreference() == computepb.LocationPolicyLocation_DENY.String() {
			denied[zone] = true
		}
	}
	allowed := slices.DeleteFunc(zones, func(z string) bool { return denied[z] })
	if len(allowed) == 0 {
		return r.Zones[0], invalidField("resource.locationPolicy.locations", "", "Every zone of the region is denied.")
	}
	props := res.GetInstanceProperties()
	market := catalog.OnDemand
	if props.GetScheduling().GetProvisioningModel() == computepb.Scheduling_SPOT.String() {
		market = catalog.Spot
	}
	for _, z := range allowed {
		if _, ok := s.world.Type(cloud, z, props.GetMachineType(), market); ok {
			return z, nil
		}
	}
	// None sells it: the first allowed zone's refusal says so.
	return allowed[0], nil
}

// renderRegionalBulk renders a regional bulkInsert's world operation as
// the region's operation.
func (s *Server) renderRegionalBulk(l links, op *sim.Operation, region string) *computepb.Operation {
	project := projectOf(op.Scope)
	out := s.renderOperation(l, op)
	out.Zone = nil
	out.Region = proto.String(l.region(project, region))
	out.TargetLink = proto.String(l.region(project, region) + "/instances")
	out.SelfLink = proto.String(l.url(regionOpPath(project, region, op.ID)))
	return out
}

// regionalBulk finds a regional bulkInsert's operation.
func (s *Server) regionalBulk(project, region, name string) (*sim.Operation, bool) {
	rec, ok := s.world.GetResource(cloud, kindRegionalBulk, name)
	if !ok || rec.Region != region {
		return nil, false
	}
	var body regionalBulkRecord
	if json.Unmarshal(rec.Body, &body) != nil || body.Project != project {
		return nil, false
	}
	op, ok := s.world.Operation(name)
	if !ok {
		s.world.DeleteResource(cloud, kindRegionalBulk, name)
	}
	return op, ok
}

// serveRegionalBulk answers regionOperations.get and .wait for a regional
// bulkInsert, the wait when it is done or times out as a zone's does.
func (s *Server) serveRegionalBulk(w http.ResponseWriter, r *http.Request, call, project, region, name string) error {
	path := regionOpPath(project, region, name)
	if err := s.admitRegion(r, call, project, region, path); err != nil {
		return err
	}
	op, ok := s.regionalBulk(project, region, name)
	if ok && call == OpRegionOperationWait {
		err := s.waitUntil(r, func() bool {
			op, ok = s.regionalBulk(project, region, name)
			return !ok || op.Done
		})
		if err != nil {
			return err
		}
	}
	if !ok {
		return notFound(path)
	}
	return writeProto(w, s.renderRegionalBulk(linksOf(r), op, region))
}
