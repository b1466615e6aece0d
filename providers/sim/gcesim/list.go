// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// maxResults is both the default and the largest page GCE's list methods
// return.
const maxResults = 500

// listQuery is a validated aggregatedList request.
type listQuery struct {
	filter filter
	limit  int
	after  *cursor
	// newestFirst is orderBy "creationTimestamp desc".
	newestFirst bool
}

// cursor is what a page token carries: the last instance of the page, in
// list order, and a check that the token belongs to the same project and
// filter. Pages resume after a position rather than an offset, so
// instances created or deleted between pages neither repeat nor go missing
// among those that stay.
type cursor struct {
	Zone  string `json:"z"`
	Name  string `json:"n"`
	Query uint32 `json:"q"`
}

// aggregatedList serves instances.aggregatedList: a project's instances
// across every zone, paged, as a map from "zones/Z" to the zone's
// instances, with a NO_RESULTS_ON_PAGE warning for zones without any on
// the page.
func (s *Server) aggregatedList(w http.ResponseWriter, r *http.Request, project string) error {
	q, invalid := parseInstanceQuery(r, project)
	if err := admitted(s.admit(r, OpAggregatedList, project, "", "", ""), invalid); err != nil {
		return err
	}

	prefix := "projects/" + project + "/zones/"
	matched := s.world.List(cloud, func(inst *sim.Instance) bool {
		return strings.HasPrefix(inst.Scope, prefix)
	})
	slices.SortFunc(matched, func(a, b *sim.Instance) int {
		return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Name, b.Name))
	})
	if q.after != nil {
		start, _ := slices.BinarySearchFunc(matched, *q.after, func(inst *sim.Instance, c cursor) int {
			return cmp.Or(cmp.Compare(inst.Zone, c.Zone), cmp.Compare(inst.Name, c.Name+"\x00"))
		})
		matched = matched[start:]
	}

	l := linksOf(r)
	resp := &computepb.InstanceAggregatedList{
		Kind:     proto.String("compute#instanceAggregatedList"),
		Id:       proto.String("projects/" + project + "/aggregated/instances"),
		SelfLink: proto.String(l.url("projects/" + project + "/aggregated/instances")),
		Items:    map[string]*computepb.InstancesScopedList{},
	}
	var page []*sim.Instance
	for _, inst := range matched {
		if !q.filter.matches(inst, func() string { return s.status(inst) }) {
			continue
		}
		if len(page) == q.limit {
			last := page[len(page)-1]
			resp.NextPageToken = proto.String(encodeCursor(cursor{Zone: last.Zone, Name: last.Name, Query: queryHash(r, project)}))
			break
		}
		page = append(page, inst)
	}
	for _, inst := range page {
		key := "zones/" + inst.Zone
		scoped := resp.Items[key]
		if scoped == nil {
			scoped = &computepb.InstancesScopedList{}
			resp.Items[key] = scoped
		}
		scoped.Instances = append(scoped.Instances, s.renderInstance(l, inst))
	}
	for _, region := range s.world.Catalog().RegionsOf(cloud) {
		for _, zone := range region.Zones {
			key := "zones/" + zone
			if resp.Items[key] == nil {
				resp.Items[key] = &computepb.InstancesScopedList{Warning: noResults(key)}
			}
		}
	}
	return writeProto(w, resp)
}

// zoneList serves instances.list: one zone's instances, paged in name
// order.
func (s *Server) zoneList(w http.ResponseWriter, r *http.Request, project, zone string) error {
	collection := scope(project, zone) + "/instances"
	q, invalid := parseInstanceQuery(r, collection)
	// The call names no region.
	if err := admitted(s.admit(r, OpList, project, "", zone, ""), invalid); err != nil {
		return err
	}
	if _, ok := s.world.ZoneRegion(cloud, zone); !ok {
		return notFound(scope(project, zone))
	}
	matched := s.world.List(cloud, func(inst *sim.Instance) bool {
		return inst.Scope == scope(project, zone)
	})
	slices.SortFunc(matched, func(a, b *sim.Instance) int { return cmp.Compare(a.Name, b.Name) })
	if q.after != nil {
		start, _ := slices.BinarySearchFunc(matched, *q.after, func(inst *sim.Instance, c cursor) int {
			return cmp.Compare(inst.Name, c.Name+"\x00")
		})
		matched = matched[start:]
	}
	l := linksOf(r)
	resp := &computepb.InstanceList{
		Kind:     proto.String("compute#instanceList"),
		Id:       proto.String(collection),
		SelfLink: proto.String(l.url(collection)),
	}
	for _, inst := range matched {
		if !q.filter.matches(inst, func() string { return s.status(inst) }) {
			continue
		}
		if len(resp.Items) == q.limit {
			last := resp.Items[len(resp.Items)-1]
			resp.NextPageToken = proto.String(encodeCursor(cursor{Zone: zone, Name: last.GetName(), Query: queryHash(r, collection)}))
			break
		}
		resp.Items = append(resp.Items, s.renderInstance(l, inst))
	}
	return writeProto(w, resp)
}

func noResults(scope string) *computepb.Warning {
	return &computepb.Warning{
		Code:    proto.String("NO_RESULTS_ON_PAGE"),
		Message: proto.String("There are no results for scope '" + scope + "' on this page."),
		Data:    []*computepb.Data{{Key: proto.String("scope"), Value: proto.String(scope)}},
	}
}

// parseListQuery reads a list request's parameters. A page token is valid
// only for the collection and filter it was issued for.
func parseListQuery(r *http.Request, collection string) (listQuery, *apiError) {
	params := r.URL.Query()
	q := listQuery{limit: maxResults}
	if expr := params.Get("filter"); strings.TrimSpace(expr) != "" {
		f, ok := parseFilter(expr)
		if !ok {
			return q, invalidField("filter", expr, "Invalid list filter expression.")
		}
		q.filter = f
	}
	if v := params.Get("maxResults"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		switch {
		case err != nil:
			return q, invalidField("maxResults", v, "Must be a non-negative integer.")
		case n > maxResults:
			return q, invalidField("maxResults", v, "Must be less than or equal to 500")
		case n > 0:
			q.limit = int(n)
		}
	}
	for _, name := range []string{"returnPartialSuccess", "includeAllScopes"} {
		if v := params.Get(name); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return q, invalidField(name, v, "Must be true or false.")
			}
		}
	}
	// GCE sorts by name, its default, or newest first; a list whose order
	// is not by name (operations, in the order they began) takes the
	// second (see newestFirstQuery).
	switch v := params.Get("orderBy"); v {
	case "", "name":
	case "creationTimestamp desc":
		q.newestFirst = true
	default:
		return q, invalidField("orderBy", v, "Sorting by this field is not supported.")
	}
	if token := params.Get("pageToken"); token != "" {
		c, ok := decodeCursor(token)
		if !ok || c.Query != queryHash(r, collection) {
			return q, invalidField("pageToken", token, "")
		}
		q.after = &c
	}
	return q, nil
}

// instanceFields are the fields instance lists are filtered on.
var instanceFields = []string{"labels", "status", "name"}

// parseInstanceQuery reads an instance list's parameters. The emulator's
// instance lists take the = and != syntax only, not eq and ne.
func parseInstanceQuery(r *http.Request, collection string) (listQuery, *apiError) {
	q, err := parseListQuery(r, collection)
	if err == nil && (!q.filter.only(instanceFields...) || q.filter.regex()) {
		err = invalidField("filter", r.URL.Query().Get("filter"), "Invalid list filter expression.")
	}
	return newestFirstQuery(q, err)
}

// queryHash ties a page token to the collection (a project's instances,
// a zone's machine types) and filter it was issued for.
func queryHash(r *http.Request, collection string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(collection + "\x00" + r.URL.Query().Get("filter")))
	return h.Sum32()
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(token string) (cursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return cursor{}, false
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Zone == "" || c.Name == "" {
		return cursor{}, false
	}
	return c, true
}
