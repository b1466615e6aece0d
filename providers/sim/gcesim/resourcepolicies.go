// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Resource policies are regional, and their inserts and deletes regional
// operations. The front applies a change at once and answers its call with
// the operation RUNNING, as GCE commonly does, so that callers go through
// regionOperations to see it DONE; every later look finds it DONE.
//
// Only group placement policies are kept, as they are what instances are
// placed by. Their rules, as GCE enforces them on instances:
//   - an instance names policies of its own project and region; a policy
//     that does not exist is a 404;
//   - a compact (COLLOCATED) policy's instances share one zone, so an
//     instance of another zone is refused;
//   - a policy that instances use cannot be deleted (400
//     resourceInUseByAnotherResource).

// policyStore holds the projects' resource policies and their operations.
// Its lock is held from the check of an instance's policies to its launch,
// so that neither a delete nor an instance of another zone comes between.
type policyStore struct {
	mu       sync.Mutex
	policies map[string]*policy   // by policyPath
	ops      map[string]*regionOp // by regionOpPath
	// requests maps project and requestId to the operation they made, for
	// GCE's replay of a repeated request.
	requests map[string]requestEntry
	seq      uint64
}

type policy struct {
	project, region, name string
	description           string
	collocation           string
	vmCount               *int32
	id                    uint64
	created               time.Time
}

type regionOp struct {
	project, region, name string
	kind                  string // "insert" or "delete"
	target                string // the policy's path
	targetID              uint64
	started               time.Time
	// failed is a fail-later fault's: the operation ends with an internal
	// error and changed nothing.
	failed bool
}

type requestEntry struct {
	op      string
	expires time.Time
}

// requestLifetime is how long GCE remembers a requestId.
const requestLifetime = time.Hour

func newPolicyStore() *policyStore {
	return &policyStore{policies: map[string]*policy{}, ops: map[string]*regionOp{}, requests: map[string]requestEntry{}}
}

func policyPath(project, region, name string) string {
	return "projects/" + project + "/regions/" + region + "/resourcePolicies/" + name
}

func regionPath(project, region string) string { return "projects/" + project + "/regions/" + region }

func regionOpPath(project, region, name string) string {
	return regionPath(project, region) + "/operations/" + name
}

// policyCall intercepts a resource policy call and checks its region.
func (s *Server) policyCall(r *http.Request, op, project, region, resource string) (sim.Outcome, error) {
	out, err := s.interceptSync(r, sim.Call{Op: op, Region: region},
		faultContext{Project: project, Region: region, Permission: permissions[op], Resource: resource})
	if err != nil {
		return out, err
	}
	if _, ok := s.world.Region(cloud, region); !ok {
		return out, notFound(regionPath(project, region))
	}
	return out, nil
}

// insertPolicy serves resourcePolicies.insert.
func (s *Server) insertPolicy(w http.ResponseWriter, r *http.Request, project, region string) error {
	var res computepb.ResourcePolicy
	var out sim.Outcome
	requestID, err := readInsert(r, &res, func(name string) (err error) {
		out, err = s.policyCall(r, OpPolicyInsert, project, region, policyPath(project, region, name))
		return err
	})
	if err != nil {
		return err
	}
	if err := checkPolicy(&res); err != nil {
		return err
	}
	st := s.policies
	st.mu.Lock()
	defer st.mu.Unlock()
	now := s.world.Now()
	if op, ok := st.replay(project, requestID, now); ok {
		return writeProto(w, s.renderRegionOp(linksOf(r), op, false))
	}
	path := policyPath(project, region, res.GetName())
	if _, ok := st.policies[path]; ok {
		return alreadyExists(path)
	}
	p := &policy{project: project, region: region, name: res.GetName(), description: res.GetDescription(),
		collocation: res.GetGroupPlacementPolicy().GetCollocation(), vmCount: res.GetGroupPlacementPolicy().VmCount,
		id: stableID(path + "\x00" + now.String()), created: now}
	if p.collocation == "" {
		p.collocation = computepb.ResourcePolicyGroupPlacementPolicy_UNSPECIFIED_COLLOCATION.String()
	}
	op := st.start(s.world, project, region, "insert", path, p.id, now, out.FailLater != nil, requestID)
	if !op.failed {
		st.policies[path] = p
	}
	return writeProto(w, s.renderRegionOp(linksOf(r), op, true))
}

// checkPolicy validates a named policy to insert: one group placement
// policy of a known collocation.
func checkPolicy(res *computepb.ResourcePolicy) *apiError {
	switch {
	case len(res.GetDescription()) > 2048:
		return invalidField("resource.description", "", "Must be at most 2048 characters long.")
	case res.SnapshotSchedulePolicy != nil || res.InstanceSchedulePolicy != nil || res.DiskConsistencyGroupPolicy != nil || res.WorkloadPolicy != nil:
		// The emulator keeps group placement policies only.
		return invalidField("resource", res.GetName(), "Only group placement policies are supported.")
	case res.GroupPlacementPolicy == nil:
		return invalidField("resource", res.GetName(), "Resource policy must specify exactly one policy.")
	}
	switch c := res.GetGroupPlacementPolicy().GetCollocation(); c {
	case "", computepb.ResourcePolicyGroupPlacementPolicy_COLLOCATED.String(), computepb.ResourcePolicyGroupPlacementPolicy_UNSPECIFIED_COLLOCATION.String():
	default:
		return invalidField("resource.groupPlacementPolicy.collocation", c, "Must be one of [COLLOCATED, UNSPECIFIED_COLLOCATION].")
	}
	if n := res.GetGroupPlacementPolicy().VmCount; n != nil && *n < 1 {
		return invalidField("resource.groupPlacementPolicy.vmCount", fmt.Sprint(*n), "Must be greater than or equal to 1.")
	}
	return nil
}

// getPolicy serves resourcePolicies.get.
func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	path := policyPath(project, region, name)
	if _, err := s.policyCall(r, OpPolicyGet, project, region, path); err != nil {
		return err
	}
	st := s.policies
	st.mu.Lock()
	p, ok := st.policies[path]
	st.mu.Unlock()
	if !ok {
		return notFound(path)
	}
	return writeProto(w, renderPolicy(linksOf(r), p))
}

// listPolicies serves resourcePolicies.list, paged in name order.
func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, project, region string) error {
	collection := regionPath(project, region) + "/resourcePolicies"
	q, invalid := newestFirstQuery(parseListQuery(r, collection))
	if _, err := s.policyCall(r, OpPolicyList, project, region, regionPath(project, region)); err != nil {
		return err
	}
	if invalid != nil {
		return invalid
	}
	if len(q.filter) > 0 {
		// The filter grammar modelled is instances'.
		return invalidField("filter", r.URL.Query().Get("filter"), "Filters on resource policies are not supported.")
	}
	st := s.policies
	st.mu.Lock()
	var matched []*policy
	for _, p := range st.policies {
		if p.project == project && p.region == region && (q.after == nil || p.name > q.after.Name) {
			matched = append(matched, p)
		}
	}
	st.mu.Unlock()
	slices.SortFunc(matched, func(a, b *policy) int { return strings.Compare(a.name, b.name) })
	resp := &computepb.ResourcePolicyList{
		Kind:     proto.String("compute#resourcePolicyList"),
		Id:       proto.String(collection),
		SelfLink: proto.String(linksOf(r).url(collection)),
		Items:    []*computepb.ResourcePolicy{},
	}
	for _, p := range matched {
		if len(resp.Items) == q.limit {
			// The cursor's zone holds the region, the policies' scope.
			resp.NextPageToken = proto.String(encodeCursor(cursor{Zone: region, Name: resp.Items[len(resp.Items)-1].GetName(), Query: queryHash(r, collection)}))
			break
		}
		resp.Items = append(resp.Items, renderPolicy(linksOf(r), p))
	}
	return writeProto(w, resp)
}

// aggregatedPolicies serves resourcePolicies.aggregatedList, which
// gcloud's resource-policies list reads: every region's policies, keyed
// "regions/R", in pages, with a NO_RESULTS_ON_PAGE warning for every
// region without any on the page. A filter names the policies.
func (s *Server) aggregatedPolicies(w http.ResponseWriter, r *http.Request, project string) error {
	collection := "projects/" + project + "/aggregated/resourcePolicies"
	q, invalid := parseNameQuery(r, collection)
	if err := admitted(s.admit(r, OpPolicyAggregated, project, "", "", "projects/"+project), invalid); err != nil {
		return err
	}
	l := linksOf(r)
	st := s.policies
	st.mu.Lock()
	var items []keyed[*computepb.ResourcePolicy]
	for _, p := range st.policies {
		if p.project == project {
			items = append(items, keyed[*computepb.ResourcePolicy]{scope: p.region, name: p.name, item: renderPolicy(l, p)})
		}
	}
	st.mu.Unlock()
	page, next := page(r, collection, q, items)
	var scopes []string
	for _, region := range s.allRegions() {
		scopes = append(scopes, "regions/"+region)
	}
	return writeList(w, l, collection, next, &computepb.ResourcePolicyAggregatedList{
		Kind: proto.String("compute#resourcePolicyAggregatedList"),
		Items: aggregate(page, "regions/", scopes, func(p keyed[*computepb.ResourcePolicy]) *computepb.ResourcePolicy { return p.item },
			func(ps []*computepb.ResourcePolicy, warning *computepb.Warning) *computepb.ResourcePoliciesScopedList {
				return &computepb.ResourcePoliciesScopedList{ResourcePolicies: ps, Warning: warning}
			}),
	})
}

// deletePolicy serves resourcePolicies.delete. A policy that instances use
// is refused, naming the first of them, as GCE names the user of a
// resource in use.
func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	requestID, idErr := requestIDOf(r)
	path := policyPath(project, region, name)
	out, err := s.policyCall(r, OpPolicyDelete, project, region, path)
	if err != nil {
		return err
	}
	if idErr != nil {
		return idErr
	}
	st := s.policies
	st.mu.Lock()
	defer st.mu.Unlock()
	now := s.world.Now()
	if op, ok := st.replay(project, requestID, now); ok {
		return writeProto(w, s.renderRegionOp(linksOf(r), op, false))
	}
	p, ok := st.policies[path]
	if !ok {
		return notFound(path)
	}
	if members := s.members(project, path); len(members) > 0 {
		return &apiError{Status: http.StatusBadRequest, Reason: "resourceInUseByAnotherResource",
			Message: fmt.Sprintf("The resource_policy resource '%s' is already being used by '%s'", path, members[0].Scope+"/instances/"+members[0].Name)}
	}
	op := st.start(s.world, project, region, "delete", path, p.id, now, out.FailLater != nil, requestID)
	if !op.failed {
		delete(st.policies, path)
	}
	return writeProto(w, s.renderRegionOp(linksOf(r), op, true))
}

// members are the project's instances that use the policy at path, in
// launch order.
func (s *Server) members(project, path string) []*sim.Instance {
	prefix := "projects/" + project + "/zones/"
	return s.world.List(cloud, func(inst *sim.Instance) bool {
		if !strings.HasPrefix(inst.Scope, prefix) {
			return false
		}
		for _, p := range strings.Fields(inst.Properties[propResourcePolicies]) {
			// Older states kept the policies' URLs.
			if rel, _ := (links{}).relative(p); rel == path {
				return true
			}
		}
		return false
	})
}

// start records a finished operation on a policy.
func (st *policyStore) start(world *sim.World, project, region, kind, target string, targetID uint64, now time.Time, failed bool, requestID string) *regionOp {
	st.seq++
	op := &regionOp{project: project, region: region, kind: kind, target: target, targetID: targetID, started: now, failed: failed,
		name: fmt.Sprintf("operation-%d-%08x-%d", now.UnixMilli(), world.Rand(1<<31), st.seq)}
	st.ops[regionOpPath(project, region, op.name)] = op
	if requestID != "" {
		st.requests[project+"\x00"+requestID] = requestEntry{op: regionOpPath(project, region, op.name), expires: now.Add(requestLifetime)}
	}
	return op
}

// replay is the operation an earlier request with the same requestId made,
// which GCE answers a repeat with, whatever the repeat asks.
func (st *policyStore) replay(project, requestID string, now time.Time) (*regionOp, bool) {
	if requestID == "" {
		return nil, false
	}
	key := project + "\x00" + requestID
	e, ok := st.requests[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(st.requests, key)
		return nil, false
	}
	op, ok := st.ops[e.op]
	return op, ok
}

// policyRefs validates the resource policies an instance names and returns
// their paths. An insert names a policy by URL, by partial URL, or by name
// in the instance's region; a bulkInsert's instance properties by name
// only, as the API reference has it. Whether the policies exist is checked
// at launch (admitPolicies).
func (s *Server) policyRefs(l links, field, project, zone string, bulk bool, refs []string) ([]string, *apiError) {
	region := s.region(zone)
	var out []string
	for i, ref := range refs {
		f := fmt.Sprintf("%s.resourcePolicies[%d]", field, i)
		if bulk && strings.Contains(ref, "/") {
			return nil, invalidField(f, ref, "Instance properties take resource policy names, not URLs.")
		}
		pr, ok := l.parseRef(ref, refOf(project, region))
		if !ok {
			return nil, invalidField(f, ref, "Must be a URL or a partial URL of a resource policy.")
		}
		p, r, name := pr.project, pr.location, pr.name
		switch {
		case !nameRE.MatchString(name):
			return nil, invalidField(f, ref, "Must be a match of regex '"+namePattern+"'")
		case p != project:
			return nil, invalidField(f, ref, "Resource policy must be in the same project as the instance.")
		case r != region:
			return nil, invalidField(f, ref, "Resource policy must be in the same region as the instance.")
		}
		path := policyPath(p, r, name)
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out, nil
}

// admitPolicies checks, for instances to launch in zone with props, that
// their resource policies exist and that each compact one holds no
// instance of another zone. On success it returns with the store locked,
// and release unlocks it once the launch is done.
//
// GCE places a compact policy's instances in one zone; the error for an
// instance of another zone is the emulator's own wording.
func (s *Server) admitPolicies(l links, field, project, zone string, props map[string]string) (release func(), err *apiError) {
	paths := strings.Fields(props[propResourcePolicies])
	if len(paths) == 0 {
		return func() {}, nil
	}
	st := s.policies
	st.mu.Lock()
	for i, path := range paths {
		p, ok := st.policies[path]
		if !ok {
			st.mu.Unlock()
			return nil, notFound(path)
		}
		if p.collocation != computepb.ResourcePolicyGroupPlacementPolicy_COLLOCATED.String() {
			continue
		}
		for _, m := range s.members(project, path) {
			if m.Zone != zone {
				st.mu.Unlock()
				return nil, invalidField(fmt.Sprintf("%s.resourcePolicies[%d]", field, i), l.url(path),
					fmt.Sprintf("The instances of a compact placement policy must be in one zone, and this policy's are in zone '%s'.", m.Zone))
			}
		}
	}
	return st.mu.Unlock, nil
}

func renderPolicy(l links, p *policy) *computepb.ResourcePolicy {
	out := &computepb.ResourcePolicy{
		Kind:              proto.String("compute#resourcePolicy"),
		Id:                proto.Uint64(p.id),
		CreationTimestamp: proto.String(timestamp(p.created)),
		Name:              proto.String(p.name),
		Region:            proto.String(l.region(p.project, p.region)),
		SelfLink:          proto.String(l.url(policyPath(p.project, p.region, p.name))),
		Status:            proto.String(computepb.ResourcePolicy_READY.String()),
		GroupPlacementPolicy: &computepb.ResourcePolicyGroupPlacementPolicy{
			Collocation: proto.String(p.collocation),
			VmCount:     p.vmCount,
		},
	}
	if p.description != "" {
		out.Description = proto.String(p.description)
	}
	return out
}

// renderRegionOp is a regional operation; initial renders it as the call
// that started it answers, still RUNNING.
func (s *Server) renderRegionOp(l links, op *regionOp, initial bool) *computepb.Operation {
	out := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(operationID(op.name)),
		Name:          proto.String(op.name),
		Region:        proto.String(l.region(op.project, op.region)),
		OperationType: proto.String(op.kind),
		TargetLink:    proto.String(l.url(op.target)),
		TargetId:      proto.Uint64(op.targetID),
		Status:        computepb.Operation_RUNNING.Enum(),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(timestamp(op.started)),
		StartTime:     proto.String(timestamp(op.started)),
		SelfLink:      proto.String(l.url(regionOpPath(op.project, op.region, op.name))),
		User:          proto.String(s.opts.User),
	}
	if initial {
		return out
	}
	out.Status = computepb.Operation_DONE.Enum()
	out.Progress = proto.Int32(100)
	out.EndTime = proto.String(timestamp(op.started))
	if op.failed {
		out.Error = &computepb.Error{Errors: []*computepb.Errors{{Code: proto.String(deleteFailure.Code),
			Message: proto.String("Internal error. Please try again or contact Google Support.")}}}
		out.HttpErrorStatusCode = proto.Int32(deleteFailure.HTTPStatus)
		out.HttpErrorMessage = proto.String(deleteFailure.HTTPText)
	}
	return out
}

// getRegionOperation serves regionOperations.get.
func (s *Server) getRegionOperation(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	return s.regionOperation(w, r, OpRegionOperationGet, project, region, name)
}

// waitRegionOperation serves regionOperations.wait, which answers at once:
// the front's regional operations are done as soon as they are made.
func (s *Server) waitRegionOperation(w http.ResponseWriter, r *http.Request, project, region, name string) error {
	return s.regionOperation(w, r, OpRegionOperationWait, project, region, name)
}

func (s *Server) regionOperation(w http.ResponseWriter, r *http.Request, call, project, region, name string) error {
	if s.isResourceOp(project, region, name) {
		// An operation on a subnetwork, which the world keeps.
		return s.serveResourceOp(w, r, call, project, region, name, call == OpRegionOperationWait)
	}
	if _, ok := s.regionalBulk(project, region, name); ok {
		return s.serveRegionalBulk(w, r, call, project, region, name)
	}
	path := regionOpPath(project, region, name)
	if _, err := s.policyCall(r, call, project, region, path); err != nil {
		return err
	}
	st := s.policies
	st.mu.Lock()
	op, ok := st.ops[path]
	st.mu.Unlock()
	if !ok {
		return notFound(path)
	}
	return writeProto(w, s.renderRegionOp(linksOf(r), op, false))
}

// refOf is the default a resource policy reference is read with: a
// policy of the instance's project and region.
func refOf(project, region string) ref {
	return ref{project: project, scope: "regions", location: region, collection: "resourcePolicies"}
}
