// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// placementGroup is one placement group, kept in the world's resource
// store (as placementGroupRecord) so that it outlives the front, as the
// instances launched into it do.
type placementGroup struct {
	id, name, strategy string
	partitionCount     int
	tags               map[string]string
}

// kindPlacementGroup is the store's kind for placement groups, which it
// keeps by id.
const kindPlacementGroup = "placementGroup"

type placementGroupRecord struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Strategy       string            `json:"strategy"`
	PartitionCount int               `json:"partitionCount,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
}

// Keys of the properties that record the placement group an instance was
// launched into.
const (
	propPlacementGroup   = "placementGroupName"
	propPlacementGroupID = "placementGroupId"
)

// placementStrategies are the strategies CreatePlacementGroup takes.
var placementStrategies = []string{"cluster", "spread", "partition"}

// maxGroupName is EC2's limit on a placement group's name.
const maxGroupName = 255

// maxPartitions is the most partitions a partition group has; 2 is what
// the console proposes and what the front gives a group that names none.
const (
	maxPartitions     = 7
	defaultPartitions = 2
)

var placementGroupID = regexp.MustCompile(`^pg-([0-9a-f]{8}|[0-9a-f]{17})$`)

type placementGroupXML struct {
	GroupName      string   `xml:"groupName"`
	State          string   `xml:"state"`
	Strategy       string   `xml:"strategy"`
	PartitionCount int      `xml:"partitionCount,omitempty"`
	GroupID        string   `xml:"groupId"`
	Tags           []tagXML `xml:"tagSet>item"`
	GroupArn       string   `xml:"groupArn"`
}

type createPlacementGroupResponse struct {
	XMLName        xml.Name          `xml:"CreatePlacementGroupResponse"`
	Xmlns          string            `xml:"xmlns,attr"`
	RequestID      string            `xml:"requestId"`
	Return         bool              `xml:"return"`
	PlacementGroup placementGroupXML `xml:"placementGroup"`
}

type describePlacementGroupsResponse struct {
	XMLName   xml.Name            `xml:"DescribePlacementGroupsResponse"`
	Xmlns     string              `xml:"xmlns,attr"`
	RequestID string              `xml:"requestId"`
	Groups    []placementGroupXML `xml:"placementGroupSet>item"`
}

// groupFilters gives, for each filter DescribePlacementGroups understands,
// a group's values for it; tag:KEY is handled apart.
var groupFilters = map[string]func(s *Server, region string, g *placementGroup) []string{
	"group-name": func(_ *Server, _ string, g *placementGroup) []string { return []string{g.name} },
	"group-arn":  func(s *Server, region string, g *placementGroup) []string { return []string{s.groupArn(region, g)} },
	"state":      func(*Server, string, *placementGroup) []string { return []string{"available"} },
	"strategy":   func(_ *Server, _ string, g *placementGroup) []string { return []string{g.strategy} },
	"spread-level": func(_ *Server, _ string, g *placementGroup) []string {
		if g.strategy == "spread" {
			return []string{"rack"}
		}
		return nil
	},
	"tag-key": func(_ *Server, _ string, g *placementGroup) []string { return slices.Sorted(maps.Keys(g.tags)) },
}

// maxPlacementGroups is EC2's limit on placement groups per account and
// region.
const maxPlacementGroups = 500

func unknownGroup(name string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidPlacementGroup.Unknown", Message: fmt.Sprintf("The Placement Group '%s' is unknown.", name)}
}

func (s *Server) groupArn(region string, g *placementGroup) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", region, s.opts.AccountID, g.name)
}

func (s *Server) renderGroup(region string, g *placementGroup) placementGroupXML {
	x := placementGroupXML{GroupName: g.name, State: "available", Strategy: g.strategy, PartitionCount: g.partitionCount, GroupID: g.id, GroupArn: s.groupArn(region, g)}
	for _, k := range slices.Sorted(maps.Keys(g.tags)) {
		x.Tags = append(x.Tags, tagXML{Key: k, Value: g.tags[k]})
	}
	return x
}

// groupsIn returns the region's groups by name, as the store holds them;
// the caller holds s.mutations, so none is made or removed meanwhile.
func (s *Server) groupsIn(region string) map[string]*placementGroup {
	_, records := stored(s, kindPlacementGroup, region, func(r placementGroupRecord) string { return r.ID })
	groups := map[string]*placementGroup{}
	for _, r := range records {
		groups[r.Name] = &placementGroup{id: r.ID, name: r.Name, strategy: r.Strategy, partitionCount: r.PartitionCount, tags: r.Tags}
	}
	return groups
}

func (s *Server) keepGroup(region string, g *placementGroup) {
	s.put(kindPlacementGroup, region, g.id, placementGroupRecord{ID: g.id, Name: g.name, Strategy: g.strategy, PartitionCount: g.partitionCount, Tags: g.tags})
}

func (s *Server) createPlacementGroup(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	g := &placementGroup{name: form.Get("GroupName"), strategy: form.Get("Strategy")}
	switch {
	case g.name == "":
		return nil, missingParameter("GroupName")
	case len(g.name) > maxGroupName:
		return nil, invalidValue("Value (%s) for parameter groupName is invalid. Length exceeds maximum of %d characters.", g.name, maxGroupName)
	case g.strategy == "":
		return nil, missingParameter("Strategy")
	case !slices.Contains(placementStrategies, g.strategy):
		return nil, invalidValue("Invalid value '%s' for Strategy. Valid values: %s", g.strategy, strings.Join(placementStrategies, ", "))
	}
	count, hasCount, apiErr := intParam(form, "PartitionCount")
	if apiErr != nil {
		return nil, apiErr
	}
	switch {
	case hasCount && g.strategy != "partition":
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "The parameter partitionCount is only valid with the partition strategy."}
	case hasCount && (count < 1 || count > maxPartitions):
		return nil, invalidValue("Value (%d) for parameter partitionCount is invalid. Expected a value between 1 and %d.", count, maxPartitions)
	case g.strategy == "partition" && !hasCount:
		count = defaultPartitions
	}
	g.partitionCount = count
	if g.tags, apiErr = specTags(form, "placement-group"); apiErr != nil {
		return nil, apiErr
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	groups := s.groupsIn(req.region)
	if _, dup := groups[g.name]; dup {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidPlacementGroup.Duplicate", Message: fmt.Sprintf("The placement group '%s' already exists.", g.name)}
	}
	// EC2 documents a limit of 500 placement groups per account and
	// region; the code it answers with is not documented, and this one is
	// the emulator's.
	if len(groups) >= maxPlacementGroups {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "PlacementGroupLimitExceeded",
			Message: fmt.Sprintf("You have reached the limit of %d placement groups in %s.", maxPlacementGroups, req.region)}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	g.id = s.newID("pg", 17)
	s.keepGroup(req.region, g)
	return createPlacementGroupResponse{Xmlns: xmlns, RequestID: req.id, Return: true, PlacementGroup: s.renderGroup(req.region, g)}, nil
}

func (s *Server) describePlacementGroups(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	form := req.form
	names := unique(list(form, "GroupName"))
	ids := unique(list(form, "GroupId"))
	fs, apiErr := knownFilters(form, groupFilters, true)
	if apiErr != nil {
		return nil, apiErr
	}
	for _, id := range ids {
		if !placementGroupID.MatchString(id) {
			return nil, malformedID("InvalidPlacementGroupId.Malformed", id, "pg")
		}
	}

	s.mutations.Lock()
	defer s.mutations.Unlock()
	groups := s.groupsIn(req.region)
	byID := map[string]*placementGroup{}
	for _, g := range groups {
		byID[g.id] = g
	}
	// Named groups and ids must all exist, as for instance ids: one
	// unknown fails the call.
	for _, name := range names {
		if groups[name] == nil {
			return nil, unknownGroup(name)
		}
	}
	for _, id := range ids {
		if byID[id] == nil {
			return nil, unknownGroup(id)
		}
	}
	out := describePlacementGroupsResponse{Xmlns: xmlns, RequestID: req.id}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		g := groups[name]
		switch {
		case len(names) > 0 && !slices.Contains(names, g.name):
			continue
		case len(ids) > 0 && !slices.Contains(ids, g.id):
			continue
		case !s.groupMatches(req.region, g, fs):
			continue
		}
		out.Groups = append(out.Groups, s.renderGroup(req.region, g))
	}
	return out, nil
}

func (s *Server) groupMatches(region string, g *placementGroup, fs []filter) bool {
	for _, f := range fs {
		var have []string
		if key, ok := strings.CutPrefix(f.name, "tag:"); ok {
			if v, ok := g.tags[key]; ok {
				have = []string{v}
			}
		} else {
			have = groupFilters[f.name](s, region, g)
		}
		if !f.matches(have) {
			return false
		}
	}
	return true
}

func (s *Server) deletePlacementGroup(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	name := req.form.Get("GroupName")
	if name == "" {
		return nil, missingParameter("GroupName")
	}

	// Under the lock that launches take, so no instance lands in the
	// group between the check that it is empty and its removal.
	s.mutations.Lock()
	defer s.mutations.Unlock()
	groups := s.groupsIn(req.region)
	g := groups[name]
	if g == nil {
		return nil, unknownGroup(name)
	}
	if len(s.groupMembers(req.region, g)) > 0 {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidPlacementGroup.InUse", Message: fmt.Sprintf("The placement group '%s' is in use and may not be deleted.", name)}
	}
	if apiErr := req.dryRunStop(); apiErr != nil {
		return nil, apiErr
	}
	s.world.DeleteResource(cloud, kindPlacementGroup, g.id)
	return s.done(req), nil
}

// groupMembers are the instances in a group that hold a place in it: all
// but the terminated, as EC2 counts them. The caller holds s.mutations.
func (s *Server) groupMembers(region string, g *placementGroup) []*sim.Instance {
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Region == region && inst.Properties[propPlacementGroupID] == g.id && stateName(inst.State) != "terminated"
	})
}

// launchGroup resolves a RunInstances' placement group, if it names one,
// and records it on the launch. A cluster group keeps its instances in one
// zone: a launch into another zone than its members' is refused, with
// EC2's code and wording. The caller holds s.mutations.
func (s *Server) launchGroup(req *request, l *launch) *apiError {
	name, id := req.form.Get("Placement.GroupName"), req.form.Get("Placement.GroupId")
	if name == "" && id == "" {
		return nil
	}
	if id != "" && !placementGroupID.MatchString(id) {
		return malformedID("InvalidPlacementGroupId.Malformed", id, "pg")
	}
	groups := s.groupsIn(req.region)
	var g *placementGroup
	if name != "" {
		g = groups[name]
	} else {
		for _, candidate := range groups {
			if candidate.id == id {
				g = candidate
			}
		}
	}
	switch {
	case g == nil:
		return unknownGroup(cmp.Or(name, id))
	case name != "" && id != "" && g.id != id:
		return &apiError{Status: http.StatusBadRequest, Code: "InvalidParameterCombination", Message: "The placement group name and id name different groups."}
	}
	if g.strategy == "cluster" {
		for _, member := range s.groupMembers(req.region, g) {
			if member.Zone != l.zone {
				return &apiError{Status: http.StatusBadRequest, Code: "InvalidPlacementGroup.InUse", Message: fmt.Sprintf("The placement group '%s' is in use in another availability zone: %s", g.name, member.Zone)}
			}
		}
	}
	if g.strategy == "spread" {
		inZone := 0
		for _, member := range s.groupMembers(req.region, g) {
			if member.Zone == l.zone {
				inZone++
			}
		}
		if inZone+l.minCount > spreadPerZone {
			return &apiError{Status: http.StatusBadRequest, Code: "InsufficientInstanceCapacity", Message: fmt.Sprintf(
				"The spread placement group '%s' can hold no more than %d running instances in %s; it holds %d and the request asks for %d.", g.name, spreadPerZone, l.zone, inZone, l.minCount)}
		}
		// As many as fit, no fewer than the request's minimum.
		l.maxCount = min(l.maxCount, spreadPerZone-inZone)
	}
	l.properties[propPlacementGroup] = g.name
	l.properties[propPlacementGroupID] = g.id
	return nil
}

// spreadPerZone is the most running instances a rack spread placement
// group holds in one availability zone: each is on a rack of its own.
const spreadPerZone = 7
