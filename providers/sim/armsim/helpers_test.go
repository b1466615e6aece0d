// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const (
	testSub = "00000000-1111-2222-3333-444444444444"
	// testRG is the fixture's resource group, which every subscription
	// has, with a network in each region (see fixture.go).
	testRG = "gpufleet"
	t4     = "Standard_NC4as_T4_v3"
	a100   = "Standard_NC24ads_A100_v4"
	// h100 is sold in eastus, eastus2 and swedencentral, on demand and as
	// spot; onDemandOnly makes a catalog where it is not sold as spot.
	h100 = "Standard_ND96isr_H100_v5"
)

// onDemandOnly is the embedded catalog without size's spot offers in
// region: a size the location sells on demand only, which the embedded
// catalog need not have.
func onDemandOnly(t *testing.T, region, size string) *catalog.Catalog {
	t.Helper()
	cat := *catalog.Default()
	cat.Offers = slices.DeleteFunc(slices.Clone(cat.Offers), func(o catalog.Offer) bool {
		return o.Cloud == catalog.Azure && o.Region == region && o.InstanceType == size && o.Market == catalog.Spot
	})
	if len(cat.Offers) == len(catalog.Default().Offers) {
		t.Fatalf("the catalog sells no %s as spot in %s", size, region)
	}
	return &cat
}

// sizeNotIn is a size the catalog has, sold in some location but not in
// region.
func sizeNotIn(t *testing.T, cat *catalog.Catalog, region string) string {
	t.Helper()
	in := map[string]bool{}
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && o.Region == region {
			in[o.InstanceType] = true
		}
	}
	for _, o := range cat.Offers {
		if o.Cloud == catalog.Azure && !in[o.InstanceType] {
			return o.InstanceType
		}
	}
	t.Fatalf("the catalog sells every size in %s", region)
	return ""
}

// fastRetry keeps azcore's retry policy but with delays fit for tests;
// MaxRetryDelay stays above the front's one-second Retry-After so a
// throttled call is retried rather than given up.
var fastRetry = policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Second}

var noRetry = policy.RetryOptions{MaxRetries: -1}

// pollFast polls as often as azcore allows under test.
var pollFast = &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}

type front struct {
	world  *sim.World
	server *Server
	url    string
	vms    *armcompute.VirtualMachinesClient
	clock  *sim.ManualClock
	// retry is the clients' retry policy.
	retry policy.RetryOptions
}

type frontConfig struct {
	world   sim.Config
	options Options
	retry   *policy.RetryOptions // nil: fastRetry
	manual  bool                 // a manual clock, for operations that take time
}

func newFront(t *testing.T, fc frontConfig) *front {
	t.Helper()
	cfg := fc.world
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.Default()
	}
	f := &front{}
	if fc.manual {
		f.clock = sim.NewManualClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
		cfg.Clock = f.clock
	}
	world, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.world = world
	f.server = New(world, fc.options)
	ts := httptest.NewServer(f.server)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	retry := fastRetry
	if fc.retry != nil {
		retry = *fc.retry
	}
	f.vms = newClient(t, ts.URL, retry)
	f.retry = retry
	t.Cleanup(func() {
		if n := f.server.panics.Load(); n != 0 {
			t.Errorf("%d requests reached the last-resort recover", n)
		}
	})
	return f
}

func newClient(t *testing.T, url string, retry policy.RetryOptions) *armcompute.VirtualMachinesClient {
	t.Helper()
	client, err := armcompute.NewVirtualMachinesClient(testSub, &azfake.TokenCredential{}, clientOptions(url, retry))
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// clientOptions point an armcompute client at the front.
func clientOptions(url string, retry policy.RetryOptions) *arm.ClientOptions {
	return &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
				azcloud.ResourceManager: {Endpoint: url, Audience: "https://management.core.windows.net/"},
			}},
			InsecureAllowCredentialWithHTTP: true,
			Retry:                           retry,
		},
		DisableRPRegistration: true,
	}
}

// vmOption adjusts a VM request.
type vmOption func(*armcompute.VirtualMachine)

func inZone(z string) vmOption {
	return func(vm *armcompute.VirtualMachine) { vm.Zones = []*string{to.Ptr(z)} }
}

func spot(policy armcompute.VirtualMachineEvictionPolicyTypes) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Properties.Priority = to.Ptr(armcompute.VirtualMachinePriorityTypesSpot)
		vm.Properties.EvictionPolicy = to.Ptr(policy)
		vm.Properties.BillingProfile = &armcompute.BillingProfile{MaxPrice: to.Ptr[float64](-1)}
	}
}

func withTags(tags map[string]string) vmOption {
	return func(vm *armcompute.VirtualMachine) {
		vm.Tags = map[string]*string{}
		for k, v := range tags {
			vm.Tags[k] = to.Ptr(v)
		}
	}
}

// vmRequest is a VM as gpufleet's provider asks for one: an Ubuntu image,
// SSH keys only, and a NIC the VM creates itself.
func vmRequest(location, size string, opts ...vmOption) armcompute.VirtualMachine {
	vm := armcompute.VirtualMachine{
		Location: to.Ptr(location),
		Tags:     map[string]*string{"gpufleet-fleet": to.Ptr("demo")},
		Properties: &armcompute.VirtualMachineProperties{
			HardwareProfile: &armcompute.HardwareProfile{VMSize: to.Ptr(armcompute.VirtualMachineSizeTypes(size))},
			StorageProfile: &armcompute.StorageProfile{
				ImageReference: &armcompute.ImageReference{
					Publisher: to.Ptr("Canonical"), Offer: to.Ptr("ubuntu-24_04-lts"), SKU: to.Ptr("server"), Version: to.Ptr("latest"),
				},
				OSDisk: &armcompute.OSDisk{CreateOption: to.Ptr(armcompute.DiskCreateOptionTypesFromImage), DiskSizeGB: to.Ptr[int32](256)},
			},
			OSProfile: &armcompute.OSProfile{
				AdminUsername: to.Ptr("gpufleet"),
				AdminPassword: to.Ptr("never-echoed"),
				LinuxConfiguration: &armcompute.LinuxConfiguration{
					DisablePasswordAuthentication: to.Ptr(true),
					SSH: &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{
						Path: to.Ptr("/home/gpufleet/.ssh/authorized_keys"), KeyData: to.Ptr("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpufleet test"),
					}}},
				},
			},
			NetworkProfile: &armcompute.NetworkProfile{
				NetworkAPIVersion: to.Ptr(armcompute.NetworkAPIVersionTwoThousandTwenty1101),
				NetworkInterfaceConfigurations: []*armcompute.VirtualMachineNetworkInterfaceConfiguration{{
					Name: to.Ptr("nic0"),
					Properties: &armcompute.VirtualMachineNetworkInterfaceConfigurationProperties{
						Primary: to.Ptr(true),
						IPConfigurations: []*armcompute.VirtualMachineNetworkInterfaceIPConfiguration{{
							Name: to.Ptr("ip0"),
							Properties: &armcompute.VirtualMachineNetworkInterfaceIPConfigurationProperties{
								Subnet: &armcompute.SubResource{ID: to.Ptr(fixtureSubnetID(location))},
							},
						}},
					},
				}},
			},
		},
	}
	for _, o := range opts {
		o(&vm)
	}
	return vm
}

// fixtureSubnetID is the fixture's subnet in a location.
func fixtureSubnetID(location string) string {
	return "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/virtualNetworks/gpu-" + normalizeLocation(location) + "/subnets/nodes"
}

// createGroup makes a resource group through the front, as a client
// would, for tests that need one besides the fixture's.
func (f *front) createGroup(t *testing.T, name, location string) {
	t.Helper()
	resp := rawRequest(t, http.MethodPut, f.url+"/subscriptions/"+testSub+"/resourcegroups/"+name+"?api-version=2022-09-01",
		[]byte(`{"location":"`+location+`"}`), http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("creating resource group %s: %s", name, resp.Status)
	}
}

// create runs a create to completion.
func (f *front) create(t *testing.T, name string, vm armcompute.VirtualMachine) (armcompute.VirtualMachine, error) {
	t.Helper()
	poller, err := f.vms.BeginCreateOrUpdate(context.Background(), testRG, name, vm, nil)
	if err != nil {
		return armcompute.VirtualMachine{}, err
	}
	res, err := poller.PollUntilDone(context.Background(), pollFast)
	return res.VirtualMachine, err
}

func (f *front) mustCreate(t *testing.T, name string, vm armcompute.VirtualMachine) armcompute.VirtualMachine {
	t.Helper()
	got, err := f.create(t, name, vm)
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return got
}

func (f *front) get(t *testing.T, name string) (armcompute.VirtualMachine, error) {
	t.Helper()
	res, err := f.vms.Get(context.Background(), testRG, name, &armcompute.VirtualMachinesClientGetOptions{
		Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView),
	})
	return res.VirtualMachine, err
}

// responseError asserts err is azcore's error for an HTTP failure with the
// given code and status (status 0: any).
func responseError(t *testing.T, err error, code string, status int) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not an *azcore.ResponseError", err, err)
	}
	if re.ErrorCode != code || status != 0 && re.StatusCode != status {
		t.Fatalf("got %s/%d, want %s/%d: %v", re.ErrorCode, re.StatusCode, code, status, err)
	}
	return re
}

// statuses returns a VM's instance-view status codes by prefix:
// "ProvisioningState" and "PowerState".
func statuses(vm armcompute.VirtualMachine) map[string]string {
	out := map[string]string{}
	if vm.Properties == nil || vm.Properties.InstanceView == nil {
		return out
	}
	for _, s := range vm.Properties.InstanceView.Statuses {
		kind, rest, _ := strings.Cut(deref(s.Code), "/")
		out[kind] = rest
	}
	return out
}

// testToken is the bearer token raw requests carry, as the SDK's
// credential would: the front takes any.
const testToken = "Bearer test-token"

// rawRequest sends a request the SDK cannot produce, with testToken
// unless header sets Authorization itself (nil values: none at all).
func rawRequest(t *testing.T, method, url string, body []byte, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", testToken)
	for k, v := range header {
		req.Header[k] = v
	}
	if v, ok := req.Header["Authorization"]; ok && v == nil {
		req.Header.Del("Authorization")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// armResponse is an answer of the front read as JSON.
type armResponse struct {
	status int
	header http.Header
	body   map[string]any
}

// call sends a request to the front with a JSON body (nil for none) and
// reads its answer.
func (f *front) call(t *testing.T, method, path string, body any) armResponse {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	url := path
	if !strings.HasPrefix(path, "http") {
		url = f.url + path
	}
	resp := rawRequest(t, method, url, raw, http.Header{"Content-Type": {"application/json"}})
	out := armResponse{status: resp.StatusCode, header: resp.Header}
	data, _ := io.ReadAll(resp.Body)
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &out.body); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return out
}

// code is the ARM error code of an answer, "" for none.
func (a armResponse) code() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// message is the ARM error message of an answer.
func (a armResponse) message() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// get reads a string at a dotted path of the body ("properties.provisioningState").
func (a armResponse) get(path string) string {
	var v any = a.body
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// want fails the test unless the answer has the status and error code
// (code "": a success).
func (a armResponse) want(t *testing.T, what string, status int, code string) {
	t.Helper()
	if a.status != status || a.code() != code {
		t.Fatalf("%s: got %d %s %q, want %d %s", what, a.status, a.code(), a.message(), status, code)
	}
}
