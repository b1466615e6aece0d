// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

type describeInstancesResponse struct {
	XMLName      xml.Name         `xml:"DescribeInstancesResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	RequestID    string           `xml:"requestId"`
	Reservations []reservationXML `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

type stateChangeXML struct {
	InstanceID    string   `xml:"instanceId"`
	CurrentState  stateXML `xml:"currentState"`
	PreviousState stateXML `xml:"previousState"`
}

type terminateInstancesResponse struct {
	XMLName   xml.Name         `xml:"TerminateInstancesResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Instances []stateChangeXML `xml:"instancesSet>item"`
}

var instanceID = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// instanceFilters gives, for each filter DescribeInstances understands, an
// instance's values for it; tag:KEY is handled apart.
var instanceFilters = map[string]func(inst *sim.Instance) []string{
	"availability-zone":    func(i *sim.Instance) []string { return []string{i.Zone} },
	"client-token":         func(i *sim.Instance) []string { return nonEmpty(i.Properties[propClientToken]) },
	"image-id":             func(i *sim.Instance) []string { return []string{i.Properties[propImage]} },
	"instance-id":          func(i *sim.Instance) []string { return []string{i.ID} },
	"instance-lifecycle":   func(i *sim.Instance) []string { return lifecycle(i) },
	"instance-state-code":  func(i *sim.Instance) []string { return []string{strconv.Itoa(stateCodes[stateName(i.State)])} },
	"instance-state-name":  func(i *sim.Instance) []string { return []string{stateName(i.State)} },
	"instance-type":        func(i *sim.Instance) []string { return []string{i.InstanceType} },
	"placement-group-name": func(i *sim.Instance) []string { return nonEmpty(i.Properties[propPlacementGroup]) },
	"reservation-id":       func(i *sim.Instance) []string { return []string{i.Properties[propReservation]} },
	"state-reason-code":    func(i *sim.Instance) []string { return nonEmpty(stateReason(i, stateName(i.State))) },
	"subnet-id":            func(i *sim.Instance) []string { return []string{i.Properties[propSubnet]} },
	"tag-key":              func(i *sim.Instance) []string { return slices.Sorted(maps.Keys(i.Tags)) },
	"key-name":             func(i *sim.Instance) []string { return nonEmpty(i.Properties[propKeyName]) },
	"root-device-name":     func(i *sim.Instance) []string { return []string{rootDeviceName(i)} },
	"architecture":         func(*sim.Instance) []string { return []string{"x86_64"} },
	"hypervisor":           func(*sim.Instance) []string { return []string{"xen"} },
	"root-device-type":     func(*sim.Instance) []string { return []string{"ebs"} },
	"virtualization-type":  func(*sim.Instance) []string { return []string{"hvm"} },
	"platform-details":     func(*sim.Instance) []string { return []string{"Linux/UNIX"} },
	"vpc-id": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return []string{n.VPC} }, true)
	},
	"private-ip-address": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return nonEmpty(n.Address) }, true)
	},
	"ip-address": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return nonEmpty(n.PublicAddress) }, true)
	},
	"private-dns-name": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return nonEmpty(privateDNSName(i.Region, n.Address)) }, true)
	},
	"instance.group-id": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return n.Groups }, true)
	},
	"instance.group-name": func(i *sim.Instance) []string { return groupNames(i, true) },
	"network-interface.subnet-id": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return []string{n.Subnet} }, false)
	},
	"network-interface.vpc-id": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return []string{n.VPC} }, false)
	},
	"network-interface.group-id": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return n.Groups }, false)
	},
	"network-interface.group-name": func(i *sim.Instance) []string { return groupNames(i, false) },
	"network-interface.addresses.private-ip-address": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return nonEmpty(n.Address) }, false)
	},
	"network-interface.interface-type": func(i *sim.Instance) []string {
		return attachedValues(i, func(n networkInterface) []string { return []string{n.Type} }, false)
	},
}

// attachedValues reads a filter's values off the instance's network
// interfaces (the primary only, for the instance's own fields); a
// terminated instance has released them and matches none.
func attachedValues(i *sim.Instance, field func(networkInterface) []string, primaryOnly bool) []string {
	if stateName(i.State) == "terminated" {
		return nil
	}
	nics := interfacesOf(i)
	if primaryOnly {
		nics = []networkInterface{primaryInterface(nics)}
	}
	var out []string
	for _, n := range nics {
		out = append(out, field(n)...)
	}
	return out
}

func groupNames(i *sim.Instance, primaryOnly bool) []string {
	return attachedValues(i, func(n networkInterface) []string {
		var names []string
		for _, g := range groupsXML(i.Region, n) {
			names = append(names, g.GroupName)
		}
		return names
	}, primaryOnly)
}

// unique drops repeated ids, keeping the first of each in place.
func unique(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// lifecycle is the instance-lifecycle filter's value: on-demand instances
// have none, as on EC2.
func lifecycle(i *sim.Instance) []string {
	if i.Market == catalog.Spot {
		return []string{"spot"}
	}
	return nil
}

func instanceValues(i *sim.Instance, name string) []string {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		if v, ok := i.Tags[key]; ok {
			return []string{v}
		}
		return nil
	}
	return instanceFilters[name](i)
}

func checkInstanceIDs(ids []string) *apiError {
	for _, id := range ids {
		if !instanceID.MatchString(id) {
			return &apiError{Status: http.StatusBadRequest, Code: "InvalidInstanceID.Malformed", Message: fmt.Sprintf("Invalid id: %q", id)}
		}
	}
	return nil
}

func instancesNotFound(missing []string) *apiError {
	msg := fmt.Sprintf("The instance ID '%s' does not exist", missing[0])
	if len(missing) > 1 {
		msg = fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidInstanceID.NotFound", Message: msg}
}

// lookup returns the region's instances with these ids, or the error naming
// every id it does not know.
func (s *Server) lookup(region string, ids []string) ([]*sim.Instance, *apiError) {
	var found []*sim.Instance
	var missing []string
	for _, id := range ids {
		inst, ok := s.world.Get(id)
		if !ok || inst.Cloud != cloud || inst.Region != region {
			missing = append(missing, id)
			continue
		}
		found = append(found, inst)
	}
	if len(missing) > 0 {
		return nil, instancesNotFound(missing)
	}
	return found, nil
}

func (s *Server) describeInstances(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	ids := unique(list(form, "InstanceId"))
	fs, apiErr := knownFilters(form, instanceFilters, true)
	if apiErr != nil {
		return nil, apiErr
	}
	p, apiErr := readSeqPage(form, ids, "instances")
	if apiErr != nil {
		return nil, apiErr
	}
	if apiErr := checkInstanceIDs(ids); apiErr != nil {
		return nil, apiErr
	}

	insts, apiErr := s.listInstances(req.region, ids, func(inst *sim.Instance) bool {
		return inst.Seq > p.after && matchesFilters(inst, fs)
	})
	if apiErr != nil {
		return nil, apiErr
	}

	out := describeInstancesResponse{Xmlns: xmlns, RequestID: req.id}
	if p.paged && len(insts) > p.size {
		insts = insts[:p.size]
		out.NextToken = encodeToken("instances", insts[len(insts)-1].Seq)
	}
	out.Reservations = s.reservations(insts)
	return out, nil
}

// seqPage is a page of instances in launch order: size of them at most,
// launched after the sequence number the NextToken names. The token is the
// launch sequence of the last instance served, so a page never repeats or
// skips an instance however many launch between pages.
type seqPage struct {
	size  int
	paged bool
	after uint64
}

// readSeqPage reads MaxResults (5 to 1000, and not with instance ids) and
// the NextToken of a listing of instances.
func readSeqPage(form url.Values, ids []string, kind string) (seqPage, *apiError) {
	size, paged, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return seqPage{}, apiErr
	}
	switch {
	case paged && len(ids) > 0:
		return seqPage{}, &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "The parameter instancesSet cannot be used with the parameter maxResults"}
	case paged && (size < 5 || size > 1000):
		return seqPage{}, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", size)
	}
	after, apiErr := nextToken(form, kind)
	if apiErr != nil {
		return seqPage{}, apiErr
	}
	return seqPage{size: size, paged: paged, after: after}, nil
}

// listInstances is the region's instances keep lets through, in launch
// order: those with these ids if there are any (all of which must exist),
// else all.
func (s *Server) listInstances(region string, ids []string, keep func(*sim.Instance) bool) ([]*sim.Instance, *apiError) {
	inRegion := func(inst *sim.Instance) bool { return inst.Region == region && keep(inst) }
	if len(ids) == 0 {
		return s.world.List(cloud, inRegion), nil
	}
	found, apiErr := s.lookup(region, ids)
	if apiErr != nil {
		return nil, apiErr
	}
	insts := slices.DeleteFunc(found, func(inst *sim.Instance) bool { return !inRegion(inst) })
	slices.SortFunc(insts, func(a, b *sim.Instance) int { return cmp.Compare(a.Seq, b.Seq) })
	return insts, nil
}

func matchesFilters(inst *sim.Instance, fs []filter) bool {
	for _, f := range fs {
		if !f.matches(instanceValues(inst, f.name)) {
			return false
		}
	}
	return true
}

// lockNamed admits a call that changes the instances it names
// (InstanceId.N), takes the mutations lock and finds every one of them:
// each must exist before any changes, as the call is all or nothing on
// EC2. The caller unlocks s.mutations when it succeeds.
func (s *Server) lockNamed(req *request) ([]*sim.Instance, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	ids := unique(list(req.form, "InstanceId"))
	if len(ids) == 0 {
		return nil, missingParameter("InstanceId")
	}
	if apiErr := checkInstanceIDs(ids); apiErr != nil {
		return nil, apiErr
	}
	s.mutations.Lock()
	found, apiErr := s.lookup(req.region, ids)
	if apiErr != nil {
		s.mutations.Unlock()
		return nil, apiErr
	}
	return found, nil
}

func (s *Server) terminateInstances(req *request) (any, *apiError) {
	found, apiErr := s.lockNamed(req)
	if apiErr != nil {
		return nil, apiErr
	}
	defer s.mutations.Unlock()
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	out := terminateInstancesResponse{Xmlns: xmlns, RequestID: req.id}
	for _, inst := range found {
		previous := stateName(inst.State)
		if _, err := s.world.Terminate(inst.ID); err != nil {
			return nil, s.worldError(err, launchContext{region: req.region})
		}
		// EC2 reports shutting-down at first; the world keeps the
		// instance so for its operation time, then has it terminated,
		// which DescribeInstances shows.
		current := "shutting-down"
		if previous == "terminated" {
			current = "terminated"
		}
		out.Instances = append(out.Instances, stateChangeXML{InstanceID: inst.ID, CurrentState: stateOf(current), PreviousState: stateOf(previous)})
	}
	return out, nil
}

func (s *Server) createTags(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	ids := list(req.form, "ResourceId")
	if len(ids) == 0 {
		return nil, missingParameter("ResourceId")
	}
	tags, apiErr := tagList(req.form, "Tag")
	if apiErr != nil {
		return nil, apiErr
	}
	if len(tags) == 0 {
		return nil, missingParameter("Tag")
	}
	var instanceIDs, networkIDs []string
	for _, id := range ids {
		switch {
		case strings.HasPrefix(id, "i-"):
			instanceIDs = append(instanceIDs, id)
		case networkKind(id) != "":
			networkIDs = append(networkIDs, id)
		default:
			// Only instances and the network model live in the world; any
			// other resource id is one this endpoint has never issued.
			return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidID", Message: fmt.Sprintf("The ID '%s' is not valid", id)}
		}
	}
	if apiErr := checkInstanceIDs(instanceIDs); apiErr != nil {
		return nil, apiErr
	}
	set := map[string]string{}
	for _, t := range tags {
		set[t.key] = t.value
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	var found []*sim.Instance
	if len(instanceIDs) > 0 {
		if found, apiErr = s.lookup(req.region, instanceIDs); apiErr != nil {
			return nil, apiErr
		}
	}
	var tagNetwork []func()
	for _, id := range networkIDs {
		apply, apiErr := s.tagNetwork(req.region, id, set)
		if apiErr != nil {
			return nil, apiErr
		}
		tagNetwork = append(tagNetwork, apply)
	}
	for _, inst := range found {
		merged := maps.Clone(inst.Tags)
		maps.Copy(merged, set)
		if len(merged) > maxTags {
			return nil, tagLimitExceeded()
		}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	for _, inst := range found {
		if err := s.world.SetTags(inst.ID, set); err != nil {
			return nil, s.worldError(err, launchContext{region: req.region})
		}
	}
	for _, apply := range tagNetwork {
		apply()
	}
	return s.done(req), nil
}
