// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// scaleSetFilter is the one $filter Compute accepts on VM lists.
var scaleSetFilter = regexp.MustCompile(`(?i)^\s*'?virtualMachineScaleSet/id'?\s+eq\s+'[^']*'\s*$`)

// list serves List (a resource group's VMs) and ListAll (a
// subscription's) a page at a time. The skip token is the creation
// sequence of the last VM served, so a page never repeats or skips a VM
// that was there when the listing started, whatever is created or deleted
// between pages.
func (s *Server) list(w http.ResponseWriter, r *http.Request, sub, resourceGroup string) {
	op := OpListAll
	if resourceGroup != "" {
		op = OpList
	}
	out, ok := s.admit(w, r, sim.Call{Op: op})
	if !ok {
		return
	}
	if out.Err != nil {
		s.writeError(w, s.fromWorld(out.Err, callContext{vm: vmRef{Subscription: sub, ResourceGroup: resourceGroup}, opType: "Read"}))
		return
	}
	if resourceGroup != "" && !s.groupExists(w, vmRef{Subscription: sub, ResourceGroup: resourceGroup}) {
		return
	}
	q := r.URL.Query()
	var view bool
	switch expand := q.Get("$expand"); {
	case expand == "":
	case strings.EqualFold(expand, "instanceView"):
		view = true
	default:
		s.writeError(w, errInvalid("$expand", "The value '%s' of parameter '$expand' is not valid. Allowed values are 'instanceView'.", expand))
		return
	}
	if strings.EqualFold(q.Get("statusOnly"), "true") {
		view = true
	}
	// The emulator has no scale sets, so a scale-set filter matches
	// nothing.
	noneMatch := false
	if f := q.Get("$filter"); f != "" {
		if !scaleSetFilter.MatchString(f) {
			s.writeError(w, errInvalid("$filter", "The value '%s' of parameter '$filter' is not valid. Only 'virtualMachineScaleSet/id' eq '<id>' is supported.", f))
			return
		}
		noneMatch = true
	}
	after, ok := decodeSkipToken(q.Get("$skiptoken"))
	if !ok {
		s.writeError(w, errInvalid("$skiptoken", "The value '%s' of parameter '$skiptoken' is not valid.", q.Get("$skiptoken")))
		return
	}
	subPrefix := strings.ToLower("/subscriptions/" + sub + "/")
	scope := vmRef{Subscription: sub, ResourceGroup: resourceGroup}.scope()
	vms := s.world.List(cloud, func(inst *sim.Instance) bool {
		if noneMatch || inst.Seq <= after {
			return false
		}
		if resourceGroup != "" {
			return inst.Scope == scope
		}
		return strings.HasPrefix(inst.Scope, subPrefix)
	})
	page := vms[:min(len(vms), s.opts.PageSize)]
	result := armcompute.VirtualMachineListResult{Value: make([]*armcompute.VirtualMachine, 0, len(page))}
	for _, inst := range page {
		result.Value = append(result.Value, s.render(inst, renderOptions{instanceView: view}))
	}
	if len(vms) > len(page) {
		next := *r.URL
		nq := url.Values{}
		for _, k := range []string{"$expand", "$filter", "statusOnly", "api-version"} {
			if v := q.Get(k); v != "" {
				nq.Set(k, v)
			}
		}
		nq.Set("$skiptoken", encodeSkipToken(page[len(page)-1].Seq))
		next.RawQuery = nq.Encode()
		result.NextLink = to.Ptr(baseURL(r) + next.RequestURI())
	}
	writeJSON(w, http.StatusOK, result)
}

const skipTokenPrefix = "vm-seq:"

func encodeSkipToken(seq uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(skipTokenPrefix + strconv.FormatUint(seq, 10)))
}

// decodeSkipToken reads a token; an empty one starts from the beginning.
func decodeSkipToken(token string) (uint64, bool) {
	if token == "" {
		return 0, true
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(raw), skipTokenPrefix) {
		return 0, false
	}
	seq, err := strconv.ParseUint(strings.TrimPrefix(string(raw), skipTokenPrefix), 10, 64)
	return seq, err == nil
}
