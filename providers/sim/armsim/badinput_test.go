// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	vmPath      = "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/virtualMachines/"
	computePath = "/subscriptions/" + testSub + "/providers/Microsoft.Compute/"
)

func body(t *testing.T, vm armcompute.VirtualMachine) []byte {
	t.Helper()
	b, err := json.Marshal(vm)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mutate(opts ...vmOption) armcompute.VirtualMachine {
	return vmRequest("eastus", t4, append([]vmOption{inZone("1")}, opts...)...)
}

// Requests the SDK would never send are answered in ARM's own shape: the
// status, {"error":{"code","message"}} and the same code in
// x-ms-error-code. None reaches the last-resort recover (newFront checks).
func TestBadInput(t *testing.T) {
	// eastus2 sells h100 on demand only, so that a spot create of it fails.
	cat := onDemandOnly(t, "eastus2", h100)
	f := newFront(t, frontConfig{world: sim.Config{Catalog: cat}})
	f.mustCreate(t, "exists", vmRequest("eastus", t4, inZone("1")))
	elsewhere := sizeNotIn(t, cat, "eastus")
	var eastusSizes []string
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && o.Region == "eastus" && !slices.Contains(eastusSizes, o.InstanceType) {
			eastusSizes = append(eastusSizes, o.InstanceType)
		}
	}
	slices.Sort(eastusSizes)
	var regions []string
	for _, r := range cat.RegionsOf(catalog.Azure) {
		regions = append(regions, r.Name)
	}
	slices.Sort(regions)
	q := "?api-version=" + APIVersion
	qs := "?api-version=" + SKUsAPIVersion
	tests := []struct {
		name       string
		method     string
		path       string
		body       []byte
		header     http.Header
		wantStatus int
		wantCode   string
		wantText   string
	}{
		{"missing api-version", "GET", vmPath + "exists", nil, nil, 400, "MissingApiVersionParameter", "(?api-version=) is required"},
		{"unknown api-version", "GET", vmPath + "exists?api-version=2099-01-01", nil, nil, 400, "NoRegisteredProviderFound",
			"No registered resource provider found for location 'eastus' and API version '2099-01-01' for type 'virtualMachines'. The supported api-versions are '2021-03-01, 2021-04-01, "},
		{"api-version older than served", "PUT", vmPath + "x?api-version=2019-03-01", body(t, mutate()), nil, 400, "NoRegisteredProviderFound", "for location 'eastus' and API version '2019-03-01'"},
		{"unknown api-version of an absent VM", "GET", vmPath + "absent?api-version=2099-01-01", nil, nil, 404, "InvalidResourceType",
			"The resource type 'virtualMachines' could not be found in the namespace 'Microsoft.Compute' for api version '2099-01-01'. The supported api-versions are '2021-03-01, "},
		{"unknown api-version of a list", "GET", vmPath[:len(vmPath)-1] + "?api-version=2099-01-01", nil, nil, 404, "InvalidResourceType", "for api version '2099-01-01'"},
		{"malformed api-version", "GET", vmPath + "exists?api-version=latest", nil, nil, 400, "InvalidApiVersionParameter", "The api-version 'latest' is invalid. The supported versions are '2025-04-01,2025-03-01,"},
		{"bad JSON", "PUT", vmPath + "x" + q, []byte(`{"location":`), nil, 400, "InvalidRequestContent", "could not be deserialized"},
		{"JSON array", "PUT", vmPath + "x" + q, []byte(`[1,2]`), nil, 400, "InvalidRequestContent", ""},
		{"wrong JSON type", "PUT", vmPath + "x" + q, []byte(`{"location":"eastus","zones":"1"}`), nil, 400, "InvalidRequestContent", ""},
		{"trailing data", "PUT", vmPath + "x" + q, append(body(t, mutate()), []byte(`}{`)...), nil, 400, "InvalidRequestContent", ""},
		{"empty body", "PUT", vmPath + "x" + q, nil, nil, 400, "InvalidRequestContent", ""},
		{"oversized body", "PUT", vmPath + "x" + q, bytes.Repeat([]byte(" "), 5<<20), nil, 413, "RequestContentTooLarge", "maximum size of 4 MB"},
		{"unknown route", "GET", "/foo/bar" + q, nil, nil, 404, "NotFound", ""},
		{"root", "GET", "/", nil, nil, 404, "NotFound", ""},
		{"unknown resource type", "GET", "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Compute/disks/d" + q, nil, nil, 404, "InvalidResourceType", "The resource type 'disks' could not be found in the namespace 'Microsoft.Compute'"},
		{"unknown namespace", "GET", "/subscriptions/" + testSub + "/providers/Microsoft.Foo/bars" + q, nil, nil, 404, "InvalidResourceNamespace", ""},
		{"unknown VM action", "POST", vmPath + "exists/redeploy" + q, nil, nil, 404, "InvalidResourceType", ""},
		{"method not allowed", "POST", vmPath + "exists" + q, nil, nil, 405, "MethodNotAllowed", ""},
		{"PATCH of more than tags", "PATCH", vmPath + "exists" + q, []byte(`{"properties":{"hardwareProfile":{"vmSize":"Standard_NC8as_T4_v3"}}}`), nil, 400, "InvalidParameter",
			"The emulator updates only tags by PATCH; the request also sets properties. Send a PUT of the whole VM to change them."},
		{"PATCH of no body", "PATCH", vmPath + "exists" + q, nil, nil, 400, "InvalidRequestContent", ""},
		{"PATCH of a VM that does not exist", "PATCH", vmPath + "nobody" + q, []byte(`{"tags":{"a":"b"}}`), nil, 404, "ResourceNotFound", ""},
		{"list with PUT", "PUT", vmPath[:len(vmPath)-1] + q, nil, nil, 405, "MethodNotAllowed", ""},
		{"invalid VM name", "PUT", vmPath + "bad.name." + q, body(t, mutate()), nil, 400, "InvalidResourceName", ""},
		{"missing location", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Location = nil })), nil, 400, "LocationRequired", ""},
		{"unknown location", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Location = to.Ptr("marsnorth") })), nil, 400, "LocationNotAvailableForResourceType",
			"The provided location 'marsnorth' is not available for resource type 'Microsoft.Compute/virtualMachines'. List of available regions for the resource type is '" + strings.Join(regions, ",") + "'."},
		{"missing size", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Properties.HardwareProfile = nil })), nil, 400, "InvalidParameter", "Required parameter 'hardwareProfile' is missing (null)."},
		{"unknown size", "PUT", vmPath + "x" + q, body(t, vmRequest("eastus", "Standard_Z99", inZone("1"))), nil, 400, "InvalidParameter",
			"The value Standard_Z99 provided for the VM size is not valid. The valid sizes in the current region are: " + strings.Join(eastusSizes, ",") + ". "},
		{"size not offered in location", "PUT", vmPath + "x" + q, body(t, vmRequest("eastus", elsewhere, inZone("1"))), nil, 409, "SkuNotAvailable",
			"The requested size for resource '" + vmPath + "x' is currently not available in location 'eastus' zones '1' for subscription '" + testSub + "'."},
		{"size not offered as spot", "PUT", vmPath + "x" + q, body(t, vmRequest("eastus2", h100, spot(armcompute.VirtualMachineEvictionPolicyTypesDelete))), nil, 409, "SkuNotAvailable", "zones ''"},
		{"unknown zone", "PUT", vmPath + "x" + q, body(t, vmRequest("eastus", t4, inZone("4"))), nil, 400, "InvalidParameter", "The supported zones for location 'eastus' are '1,2,3'"},
		{"two zones", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Zones = []*string{to.Ptr("1"), to.Ptr("2")} })), nil, 400, "InvalidParameter", ""},
		{"unknown priority", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) {
			vm.Properties.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypes("Cheap"))
		})), nil, 400, "InvalidParameter", "'priority'"},
		{"eviction policy on a regular VM", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) {
			vm.Properties.EvictionPolicy = to.Ptr(armcompute.VirtualMachineEvictionPolicyTypesDelete)
		})), nil, 400, "InvalidParameter", "Eviction policy can be set only on Azure Spot Virtual Machines."},
		{"invalid max price", "PUT", vmPath + "x" + q, body(t, mutate(spot(armcompute.VirtualMachineEvictionPolicyTypesDelete), func(vm *armcompute.VirtualMachine) {
			vm.Properties.BillingProfile.MaxPrice = to.Ptr(-2.0)
		})), nil, 400, "InvalidParameter", "billingProfile.maxPrice"},
		{"missing network", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Properties.NetworkProfile = nil })), nil, 400, "InvalidParameter", "Required parameter 'networkProfile' is missing (null)."},
		{"missing image", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Properties.StorageProfile.ImageReference = nil })), nil, 400, "InvalidParameter", ""},
		{"missing OS profile", "PUT", vmPath + "x" + q, body(t, mutate(func(vm *armcompute.VirtualMachine) { vm.Properties.OSProfile = nil })), nil, 400, "InvalidParameter", "'osProfile'"},
		{"empty path segment", "GET", "/subscriptions/" + testSub + "/resourceGroups//providers/Microsoft.Compute/virtualMachines/x" + q, nil, nil, 404, "NotFound", ""},
		{"If-Match with an etag", "PUT", vmPath + "exists" + q, body(t, mutate()), http.Header{"If-Match": {`"1"`}}, 412, "PreconditionFailed", ""},
		{"If-Match on a new VM", "PUT", vmPath + "x" + q, body(t, mutate()), http.Header{"If-Match": {"*"}}, 412, "PreconditionFailed", ""},
		{"invalid $expand", "GET", vmPath + "exists" + q + "&$expand=everything", nil, nil, 400, "InvalidParameter", ""},
		{"invalid skip token", "GET", vmPath[:len(vmPath)-1] + q + "&$skiptoken=bm9wZQ", nil, nil, 400, "InvalidParameter", ""},
		{"unsupported filter", "GET", vmPath[:len(vmPath)-1] + q + "&$filter=tags/x eq 'y'", nil, nil, 400, "InvalidParameter", ""},
		{"unknown operation", "GET", "/subscriptions/" + testSub + "/providers/Microsoft.Compute/locations/eastus/operations/nope" + q, nil, nil, 404, "NotFound", ""},
		{"absent VM", "GET", vmPath + "absent" + q, nil, nil, 404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachines/absent' under resource group"},
		{"usages in an unknown location", "GET", computePath + "locations/marsnorth/usages" + q, nil, nil, 400, "NoRegisteredProviderFound",
			"No registered resource provider found for location 'marsnorth' and API version '2025-04-01' for type 'locations/usages'."},
		{"usages with a SKUs-only api-version", "GET", computePath + "locations/eastus/usages?api-version=2019-04-01", nil, nil, 400, "NoRegisteredProviderFound",
			"No registered resource provider found for location 'eastus' and API version '2019-04-01' for type 'locations/usages'."},
		{"usages with POST", "POST", computePath + "locations/eastus/usages" + q, nil, nil, 405, "MethodNotAllowed", ""},
		{"usages with an invalid skip token", "GET", computePath + "locations/eastus/usages" + q + "&$skiptoken=bm9wZQ", nil, nil, 400, "InvalidParameter", ""},
		{"usages skip token past the end", "GET", computePath + "locations/eastus/usages" + q + "&$skiptoken=b2Zmc2V0Ojk5OQ", nil, nil, 400, "InvalidParameter", ""},
		{"SKUs with the compute api-version", "GET", computePath + "skus" + q, nil, nil, 404, "InvalidResourceType", "The supported api-versions are '2019-04-01, 2021-07-01'."},
		{"SKUs without an api-version", "GET", computePath + "skus", nil, nil, 400, "MissingApiVersionParameter", ""},
		{"SKUs filtered by zone", "GET", computePath + "skus" + qs + "&$filter=zone eq '1'", nil, nil, 400, "InvalidParameter", "Only a location filter"},
		{"SKUs with a bad includeExtendedLocations", "GET", computePath + "skus" + qs + "&includeExtendedLocations=maybe", nil, nil, 400, "InvalidParameter", "'includeExtendedLocations'"},
		{"SKUs with an invalid skip token", "GET", computePath + "skus" + qs + "&$skiptoken=@@", nil, nil, 400, "InvalidParameter", ""},
		{"a SKU by name", "GET", computePath + "skus/" + t4 + qs, nil, nil, 404, "InvalidResourceType", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := rawRequest(t, tt.method, f.url+strings.ReplaceAll(tt.path, " ", "%20"), tt.body, tt.header)
			raw, _ := io.ReadAll(resp.Body)
			var got errorBody
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("body is not an ARM error: %v: %s", err, raw)
			}
			if resp.StatusCode != tt.wantStatus || got.Error.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d %s: %s", resp.StatusCode, got.Error.Code, tt.wantStatus, tt.wantCode, raw)
			}
			if h := resp.Header.Get("x-ms-error-code"); h != got.Error.Code {
				t.Fatalf("x-ms-error-code %q, body code %q", h, got.Error.Code)
			}
			if !strings.Contains(got.Error.Message, tt.wantText) || got.Error.Message == "" {
				t.Fatalf("message %q lacks %q", got.Error.Message, tt.wantText)
			}
		})
	}
	if n := len(f.world.List("azure", nil)); n != 1 {
		t.Fatalf("bad input created VMs: %d listed", n)
	}
}

// FuzzPut throws arbitrary bodies at PUT: every answer is a VM or an ARM
// error, and nothing reaches the last-resort recover.
func FuzzPut(f *testing.F) {
	good, _ := json.Marshal(vmRequest("eastus", t4, inZone("1")))
	for _, seed := range []string{string(good), `{}`, `null`, `{"location":null}`, `{"properties":{"hardwareProfile":{}}}`,
		`{"location":"eastus","zones":[null],"properties":{"hardwareProfile":{"vmSize":"Standard_NC4as_T4_v3"}}}`,
		`{"location":"eastus","properties":{"priority":"Spot","billingProfile":{"maxPrice":1e308}}}`} {
		f.Add([]byte(seed))
	}
	world, err := sim.New(sim.Config{Catalog: catalog.Default()})
	if err != nil {
		f.Fatal(err)
	}
	server := New(world, Options{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req := httptest.NewRequest("PUT", vmPath+"fuzz?api-version="+APIVersion, bytes.NewReader(b))
		req.Header.Set("Authorization", testToken)
		rec := httptest.NewRecorder()
		server.ServeHTTP(rec, req)
		if server.panics.Load() != 0 {
			t.Fatalf("panic on %q: %s", b, rec.Body)
		}
		if rec.Code >= 300 {
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || rec.Header().Get("x-ms-error-code") != e.Error.Code {
				t.Fatalf("status %d without an ARM error: %s", rec.Code, rec.Body)
			}
		}
	})
}
