// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	// apiVersion is the only version of the EC2 Query API the SDK speaks.
	apiVersion = "2016-11-15"
	xmlns      = "http://ec2.amazonaws.com/doc/2016-11-15/"
	cloud      = catalog.AWS
	// unsignedRegion serves requests without a SigV4 credential scope.
	unsignedRegion = "us-east-1"
	maxBodyBytes   = 1 << 20
	// defaultAccountID owns every reservation unless Options say otherwise.
	defaultAccountID = "123456789012"
)

// Options configures the front.
type Options struct {
	// AccountID is the ownerId of every reservation; empty means
	// 123456789012.
	AccountID string
	// SpotHistory, when set, gives every spot price a seeded past.
	SpotHistory *SpotHistory
}

// Server is the EC2 front, an http.Handler for the EC2 Query API. It never
// listens itself.
type Server struct {
	world *sim.World
	opts  Options
	// mutations serialises the actions that change instances and the
	// objects they refer to (subnets, groups, placement groups), so that a
	// launch of several instances is all-or-nothing, a ClientToken replay
	// cannot race the launch it repeats, and nothing a launch checked is
	// removed before it lands.
	mutations sync.Mutex
	requests  atomic.Uint64
}

var _ http.Handler = (*Server)(nil)

// New returns the EC2 front of a world.
func New(world *sim.World, opts Options) *Server {
	if opts.AccountID == "" {
		opts.AccountID = defaultAccountID
	}
	return &Server{world: world, opts: opts}
}

// request is one Query API call, parsed as far as every action needs.
type request struct {
	ctx    context.Context
	id     string
	action string
	region string
	form   url.Values
	// class is the request class EC2's rate limits meter the action in;
	// empty for Service Quotas, which EC2's buckets do not meter.
	class string
	// dryRun is set for DryRun=true: the call is checked, not made.
	dryRun bool
}

type action func(s *Server, req *request) (any, *apiError)

var actions = map[string]action{
	"RunInstances":                  (*Server).runInstances,
	"DescribeInstances":             (*Server).describeInstances,
	"TerminateInstances":            (*Server).terminateInstances,
	"StopInstances":                 (*Server).stopInstances,
	"StartInstances":                (*Server).startInstances,
	"CreateTags":                    (*Server).createTags,
	"DescribeTags":                  (*Server).describeTags,
	"DescribeSpotInstanceRequests":  (*Server).describeSpotInstanceRequests,
	"DescribeSpotPriceHistory":      (*Server).describeSpotPriceHistory,
	"DescribeInstanceTypeOfferings": (*Server).describeInstanceTypeOfferings,
	"DescribeInstanceAttribute":     (*Server).describeInstanceAttribute,
	"DescribeImages":                (*Server).describeImages,
	"DescribeVolumes":               (*Server).describeVolumes,
	"CreatePlacementGroup":          (*Server).createPlacementGroup,
	"DescribePlacementGroups":       (*Server).describePlacementGroups,
	"DeletePlacementGroup":          (*Server).deletePlacementGroup,
	"DescribeInstanceTypes":         (*Server).describeInstanceTypes,
	"DescribeAvailabilityZones":     (*Server).describeAvailabilityZones,
	"DescribeRegions":               (*Server).describeRegions,
	"DescribeInstanceStatus":        (*Server).describeInstanceStatus,
	"CreateVpc":                     (*Server).createVpc,
	"DescribeVpcs":                  (*Server).describeVpcs,
	"DeleteVpc":                     (*Server).deleteVpc,
	"CreateSubnet":                  (*Server).createSubnet,
	"DescribeSubnets":               (*Server).describeSubnets,
	"DeleteSubnet":                  (*Server).deleteSubnet,
	"CreateSecurityGroup":           (*Server).createSecurityGroup,
	"DescribeSecurityGroups":        (*Server).describeSecurityGroups,
	"DeleteSecurityGroup":           (*Server).deleteSecurityGroup,
	"AuthorizeSecurityGroupIngress": (*Server).authorizeIngress,
	"AuthorizeSecurityGroupEgress":  (*Server).authorizeEgress,
}

// mutatingActions are the actions served that change something, which
// EC2 meters in a bucket of their own; the rest, the Describe* calls, are
// non-mutating.
var mutatingActions = map[string]bool{
	"RunInstances":         true,
	"TerminateInstances":   true,
	"StopInstances":        true,
	"StartInstances":       true,
	"CreateTags":           true,
	"CreatePlacementGroup": true,
	"DeletePlacementGroup": true,
	"CreateVpc":            true,
	"DeleteVpc":            true,
	"CreateSubnet":         true,
	"DeleteSubnet":         true,
	"CreateSecurityGroup":  true,
	"DeleteSecurityGroup":  true,

	"AuthorizeSecurityGroupIngress": true,
	"AuthorizeSecurityGroupEgress":  true,
}

func actionClass(action string) string {
	if mutatingActions[action] {
		return sim.ClassMutating
	}
	return sim.ClassNonMutating
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	requestID := s.newRequestID()
	// The JSON protocol names its operation in a header, the Query protocol
	// in the body: the one endpoint serves Service Quotas beside EC2.
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.serveJSON(w, r, requestID, target)
		return
	}
	defer func() {
		// A last line of defence: a panic must still read as EC2's 500,
		// not as a dropped connection the SDK would retry blindly.
		if p := recover(); p != nil {
			writeError(w, requestID, &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: "An internal error has occurred"})
		}
	}()
	out, apiErr := s.serve(w, r, requestID)
	if apiErr != nil {
		writeError(w, requestID, apiErr)
		return
	}
	writeXML(w, http.StatusOK, out)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, requestID string) (any, *apiError) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "RequestEntityTooLarge", Message: fmt.Sprintf("Request body exceeds %d bytes", maxBodyBytes)}
		}
		return nil, &apiError{Status: http.StatusNotFound, Code: "MalformedQueryString", Message: "The query string contains a syntax error."}
	}
	name := r.Form.Get("Action")
	if name == "" {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "MissingAction", Message: "The request must contain the parameter Action"}
	}
	switch version := r.Form.Get("Version"); version {
	case apiVersion:
	case "":
		return nil, missingParameter("Version")
	default:
		return nil, &apiError{Status: http.StatusBadRequest, Code: "NoSuchVersion", Message: fmt.Sprintf("The requested version (%s) of service AmazonEC2 does not exist", version)}
	}
	handle, ok := actions[name]
	if !ok {
		return nil, &apiError{Status: http.StatusBadRequest, Code: "InvalidAction", Message: fmt.Sprintf("The action %s is not valid for this web service.", name)}
	}
	region, apiErr := s.regionOf(r)
	if apiErr != nil {
		return nil, apiErr
	}
	if s.world.Denied(cloud, name) {
		// EC2 checks permission before anything else, a dry run's too:
		// answering it is what a dry run is for.
		return nil, &apiError{Status: http.StatusForbidden, Code: "UnauthorizedOperation", Message: fmt.Sprintf(
			"You are not authorized to perform this operation. User: arn:aws:iam::%s:user/gpufleet is not authorized to perform: ec2:%s because no identity-based policy allows the ec2:%s action", s.opts.AccountID, name, name)}
	}
	req := &request{ctx: r.Context(), id: requestID, action: name, region: region, form: r.Form, class: actionClass(name)}
	switch r.Form.Get("DryRun") {
	case "true":
		req.dryRun = true
	case "", "false":
	default:
		return nil, invalidValue("Value (%s) for parameter dryRun is invalid. Expected a boolean.", r.Form.Get("DryRun"))
	}
	out, apiErr := handle(s, req)
	if req.dryRun && apiErr == nil {
		// A call that reads: it was checked in full, and is answered as
		// a dry run is. (A call that changes something stops itself at
		// dryRunStop, before its change.)
		return nil, dryRunSucceeded()
	}
	return out, apiErr
}

// A dry run is checked as the call itself would be, its parameters and
// the resources it names, and answered with the error the call would have
// met, or with DryRunOperation where it would have succeeded; nothing
// changes, and capacity is not looked at (EC2 checks permission and
// parameters, not whether the instances would fit).

// dryRunStop is what a call that changes something answers at the point
// of its change: nil, to go on, or DryRunOperation for a dry run.
func (req *request) dryRunStop() *apiError {
	if !req.dryRun {
		return nil
	}
	return dryRunSucceeded()
}

func dryRunSucceeded() *apiError {
	return &apiError{Status: http.StatusPreconditionFailed, Code: "DryRunOperation", Message: "Request would have succeeded, but DryRun flag is set."}
}

// regionOf reads the region from the SigV4 credential scope
// (Credential=AKID/DATE/REGION/SERVICE/aws4_request). Signatures are not
// checked: the emulator accepts any credentials.
func (s *Server) regionOf(r *http.Request) (string, *apiError) {
	region, _, apiErr := s.credentialScope(r, r.Form.Get("X-Amz-Credential"))
	return region, apiErr
}

// credentialScope returns the region and service a request is signed for;
// presigned is the scope a presigned request carries in its parameters. An
// unsigned request is served in us-east-1, for no service in particular.
func (s *Server) credentialScope(r *http.Request, presigned string) (region, service string, apiErr *apiError) {
	scope := presigned
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, params, _ := strings.Cut(auth, " ")
		if scheme != "AWS4-HMAC-SHA256" {
			return "", "", &apiError{Status: http.StatusBadRequest, Code: "IncompleteSignature", Message: fmt.Sprintf("Unsupported authorization scheme %q", scheme)}
		}
		scope = ""
		for part := range strings.SplitSeq(params, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Credential="); ok {
				scope = v
			}
		}
		if scope == "" {
			return "", "", &apiError{Status: http.StatusBadRequest, Code: "IncompleteSignature", Message: "Authorization header requires 'Credential' parameter."}
		}
	}
	if scope == "" {
		return unsignedRegion, "", nil
	}
	parts := strings.Split(scope, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return "", "", &apiError{Status: http.StatusBadRequest, Code: "IncompleteSignature", Message: fmt.Sprintf("Credential %q is not of the form KEY/DATE/REGION/SERVICE/aws4_request.", scope)}
	}
	if _, ok := s.world.Region(cloud, parts[2]); !ok {
		return "", "", &apiError{Status: http.StatusUnauthorized, Code: "AuthFailure", Message: fmt.Sprintf("Credential should be scoped to a valid region, not '%s'.", parts[2])}
	}
	return parts[2], parts[3], nil
}

// admit runs a call past the world's rate limits and faults, and answers
// for them when they strike.
func (s *Server) admit(req *request) *apiError {
	outcome, apiErr := s.intercept(req, "", "")
	if apiErr != nil {
		return apiErr
	}
	if outcome.Err != nil {
		return s.worldError(outcome.Err, launchContext{region: req.region})
	}
	return nil
}

// intercept lets the world's rate limits and faults act on a call: it
// waits out any injected latency and returns the outcome, whose Err the
// caller answers with (it knows the context the message needs). EC2
// throttles each account in each region apart, so the account's buckets
// are the region's.
func (s *Server) intercept(req *request, zone, instanceType string) (sim.Outcome, *apiError) {
	out := s.world.Intercept(sim.Call{Cloud: cloud, Op: req.action, Region: req.region, Zone: zone, InstanceType: instanceType,
		Class: req.class, Tenant: s.opts.AccountID + "/" + req.region})
	if !sim.Wait(req.ctx, out.Latency) {
		// The client is gone; the answer only has to be well formed.
		return out, &apiError{Status: http.StatusServiceUnavailable, Code: "Unavailable", Message: "The request was cancelled."}
	}
	return out, nil
}

func (s *Server) newRequestID() string {
	n := s.requests.Add(1)
	return fmt.Sprintf("5e1f0ec2-%04x-4%03x-8%03x-%012x", (n>>48)&0xffff, (n>>36)&0xfff, (n>>24)&0xfff, n&0xffffffffffff)
}

func writeXML(w http.ResponseWriter, status int, v any) {
	body, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	w.Write([]byte(xml.Header))
	w.Write(body)
}
