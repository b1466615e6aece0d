// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/xml"
	"maps"
	"slices"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// DescribeTags lists the tags of the region's resources, one item a tag,
// with the resource's id and type, filtered by key, value, resource-id and
// resource-type, and paged by MaxResults (5 to 1000) and NextToken.

type describeTagsResponse struct {
	XMLName   xml.Name         `xml:"DescribeTagsResponse"`
	Xmlns     string           `xml:"xmlns,attr"`
	RequestID string           `xml:"requestId"`
	Tags      []tagDescription `xml:"tagSet>item"`
	NextToken string           `xml:"nextToken,omitempty"`
}

type tagDescription struct {
	ResourceID   string `xml:"resourceId"`
	ResourceType string `xml:"resourceType"`
	Key          string `xml:"key"`
	Value        string `xml:"value"`
}

var tagFilters = map[string]func(tagDescription) []string{
	"key":           func(d tagDescription) []string { return []string{d.Key} },
	"value":         func(d tagDescription) []string { return []string{d.Value} },
	"resource-id":   func(d tagDescription) []string { return []string{d.ResourceID} },
	"resource-type": func(d tagDescription) []string { return []string{d.ResourceType} },
}

// maxTagResults is the most DescribeTags answers in one page, and its
// default.
const maxTagResults = 1000

func (s *Server) describeTags(req *request) (any, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return nil, apiErr
	}
	fs, apiErr := knownFilters(req.form, tagFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	maxResults, paged, apiErr := intParam(req.form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	if paged && (maxResults < 5 || maxResults > maxTagResults) {
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and %d.", maxResults, maxTagResults)
	}
	if !paged {
		maxResults = maxTagResults
	}
	n, apiErr := nextToken(req.form, "tags")
	if apiErr != nil {
		return nil, apiErr
	}
	all := slices.DeleteFunc(s.tagDescriptions(req.region), func(d tagDescription) bool { return !matchesTable(d, fs, tagFilters) })
	tags, next, apiErr := cut(all, page{offset: int(n), size: maxResults, paged: true}, "tags")
	if apiErr != nil {
		return nil, apiErr
	}
	return describeTagsResponse{Xmlns: xmlns, RequestID: req.id, Tags: tags, NextToken: next}, nil
}

// tagDescriptions are the tags of every resource of the region the front
// knows, ordered by resource type, resource id and key.
func (s *Server) tagDescriptions(region string) []tagDescription {
	var out []tagDescription
	add := func(kind, id string, tags map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(tags)) {
			out = append(out, tagDescription{ResourceID: id, ResourceType: kind, Key: k, Value: tags[k]})
		}
	}
	for _, inst := range s.world.List(cloud, func(inst *sim.Instance) bool { return inst.Region == region }) {
		add("instance", inst.ID, inst.Tags)
	}
	for _, v := range s.vpcs(region) {
		add("vpc", v.ID, v.Tags)
	}
	for _, sn := range s.subnets(region) {
		add("subnet", sn.ID, sn.Tags)
	}
	for _, g := range s.securityGroups(region) {
		add("security-group", g.ID, g.Tags)
	}
	for _, g := range s.groupsIn(region) {
		add("placement-group", g.id, g.tags)
	}
	for _, v := range s.volumes(region) {
		tags := map[string]string{}
		for _, t := range v.Tags {
			tags[t.Key] = t.Value
		}
		add("volume", v.VolumeID, tags)
	}
	slices.SortStableFunc(out, func(a, b tagDescription) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceID, b.ResourceID), cmp.Compare(a.Key, b.Key))
	})
	return out
}
