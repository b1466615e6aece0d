// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"encoding/xml"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// What the Describe, Create and Delete calls of the network model share:
// tags given at creation and read back, filters with tag:KEY, pages by
// offset, the id a call acts on, and the bare "return true" answer.

// sortedTags draws tags as EC2 lists them, by key.
func sortedTags(tags map[string]string) []tagXML {
	var out []tagXML
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, tagXML{Key: k, Value: tags[k]})
	}
	return out
}

// specTags reads the tags a create's TagSpecification.N gives a resource
// of this type; a specification for another type is EC2's error.
func specTags(form url.Values, resourceType string) (map[string]string, *apiError) {
	tags := map[string]string{}
	for _, n := range indexes(form, "TagSpecification") {
		prefix := fmt.Sprintf("TagSpecification.%d", n)
		if t := form.Get(prefix + ".ResourceType"); t != resourceType {
			return nil, invalidValue("'%s' is not a valid taggable resource type for this operation.", t)
		}
		list, apiErr := tagList(form, prefix+".Tag")
		if apiErr != nil {
			return nil, apiErr
		}
		for _, t := range list {
			tags[t.key] = t.value
		}
	}
	if len(tags) > maxTags {
		return nil, tagLimitExceeded()
	}
	return tags, nil
}

// matchesTagged applies filters to a resource's values, tag:KEY and
// tag-key to its tags.
func matchesTagged(fs []filter, values map[string][]string, tags map[string]string) bool {
	for _, f := range fs {
		var have []string
		switch key, isTag := strings.CutPrefix(f.name, "tag:"); {
		case isTag:
			if v, ok := tags[key]; ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			have = slices.Collect(maps.Keys(tags))
		default:
			have = values[f.name]
		}
		if !f.matches(have) {
			return false
		}
	}
	return true
}

// page reads MaxResults (5 to 1000, none for all) and NextToken, an
// offset into the list, for the network model's Describe calls.
type page struct {
	offset, size int
	paged        bool
}

func readPage(form url.Values, kind string) (page, *apiError) {
	size, paged, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return page{}, apiErr
	}
	if paged && (size < 5 || size > 1000) {
		return page{}, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", size)
	}
	n, apiErr := nextToken(form, kind)
	if apiErr != nil {
		return page{}, apiErr
	}
	return page{offset: int(n), size: size, paged: paged}, nil
}

// describeQuery is what a Describe call of the network model reads
// before it looks: its filters, checked against the names the action
// knows, and its page of the kind's listing.
type describeQuery struct {
	filters []filter
	page    page
	kind    string
}

// openDescribe admits a Describe call of the network model and reads its
// filters and page, in the order EC2 refuses them.
func (s *Server) openDescribe(req *request, known map[string]bool, kind string) (describeQuery, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return describeQuery{}, apiErr
	}
	fs, apiErr := knownFilters(req.form, known, true)
	if apiErr != nil {
		return describeQuery{}, apiErr
	}
	p, apiErr := readPage(req.form, kind)
	if apiErr != nil {
		return describeQuery{}, apiErr
	}
	return describeQuery{filters: fs, page: p, kind: kind}, nil
}

// pickByID is the records a call names by id, in the order it names them,
// or every record when it names none; an id not among them is notFound's
// error.
func pickByID[R any](all []R, ids []string, id func(R) string, notFound func(string) *apiError) ([]R, *apiError) {
	if len(ids) == 0 {
		return all, nil
	}
	var picked []R
	for _, want := range ids {
		r, ok := find(all, func(r R) bool { return id(r) == want })
		if !ok {
			return nil, notFound(want)
		}
		picked = append(picked, r)
	}
	return picked, nil
}

// selectPage draws the records keep lets through, in order, and cuts the
// query's page of them.
func selectPage[R, X any](q describeQuery, records []R, keep func(R) (X, bool)) ([]X, string, *apiError) {
	var out []X
	for _, r := range records {
		if x, ok := keep(r); ok {
			out = append(out, x)
		}
	}
	return cut(out, q.page, q.kind)
}

// cut returns the page of items and the token of the next, if any.
func cut[T any](items []T, p page, kind string) ([]T, string, *apiError) {
	if p.offset > len(items) {
		return nil, "", invalidPaginationToken()
	}
	items = items[p.offset:]
	if p.paged && len(items) > p.size {
		return items[:p.size], encodeToken(kind, uint64(p.offset+p.size)), nil
	}
	return items, "", nil
}

// targetID admits a call that acts on one resource and reads its id from
// param, refusing one missing or not of pattern's shape as EC2 does.
func (s *Server) targetID(req *request, param string, pattern *regexp.Regexp, malformedCode, prefix string) (string, *apiError) {
	if apiErr := s.admit(req); apiErr != nil {
		return "", apiErr
	}
	id := req.form.Get(param)
	if id == "" {
		return "", missingParameter(param)
	}
	if !pattern.MatchString(id) {
		return "", malformedID(malformedCode, id, prefix)
	}
	return id, nil
}

// returnResponse is the answer of the actions that say only that they
// did it.
type returnResponse struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	RequestID string `xml:"requestId"`
	Return    bool   `xml:"return"`
}

func (s *Server) done(req *request) returnResponse {
	return returnResponse{XMLName: xml.Name{Local: req.action + "Response"}, Xmlns: xmlns, RequestID: req.id, Return: true}
}
