// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

var epoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

const (
	tenancy     = "ocid1.tenancy.oc1..gpufleettest"
	user        = "ocid1.user.oc1..gpufleettest"
	fingerprint = "20:3b:97:13:55:1c:5b:0d:d3:37:d8:50:4e:c5:3a:34"
	compartment = "ocid1.compartment.oc1..gpufleettest"
	image       = "ocid1.image.oc1.iad.aaaaaaaagpufleettest"
	subnet      = "ocid1.subnet.oc1.iad.aaaaaaaagpufleettest"
	sshKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITest ops@example"

	ashburn   = "us-ashburn-1"
	frankfurt = "eu-frankfurt-1"
	ad1       = "gpuf:US-ASHBURN-AD-1"
	ad2       = "gpuf:US-ASHBURN-AD-2"
	ad3       = "gpuf:US-ASHBURN-AD-3"

	a10  = "VM.GPU.A10.1"
	a100 = "BM.GPU.A100-v2.8"
	// a10Limit is the catalog's service limit a launch of a10 counts against.
	a10Limit = "gpu-a10-count"

	computeHost = "iaas.us-ashburn-1.oraclecloud.com"
)

func keyID() string { return tenancy + "/" + user + "/" + fingerprint }

// The keys tests sign with, made once: an RSA key takes a while to make.
var (
	testKey  = sync.OnceValue(func() *rsa.PrivateKey { return newKey() })
	otherKey = sync.OnceValue(func() *rsa.PrivateKey { return newKey() })
)

func newKey() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}

// testCatalog is two OCI regions: Ashburn, whose first two availability
// domains sell the A10 shape and whose first the A100 one too, and
// Frankfurt, whose one domain sells the A10 shape; on demand only, with a
// regional limit on A10 GPUs.
func testCatalog() *catalog.Catalog {
	a10Offer := func(region, zone string) catalog.Offer {
		return catalog.Offer{Cloud: catalog.OCI, Region: region, Zone: zone, InstanceType: a10, Market: catalog.OnDemand,
			GPUModel: "A10", GPUs: 1, VCPUs: 30, MemoryGiB: 240, PriceMicros: 2000000}
	}
	return &catalog.Catalog{
		Regions: []catalog.Region{
			{Cloud: catalog.OCI, Name: ashburn, Country: "US", Zones: []string{"US-ASHBURN-AD-1", "US-ASHBURN-AD-2", "US-ASHBURN-AD-3"}},
			{Cloud: catalog.OCI, Name: frankfurt, Country: "DE", Zones: []string{"EU-FRANKFURT-1-AD-1"}},
		},
		Offers: []catalog.Offer{
			a10Offer(ashburn, "US-ASHBURN-AD-1"),
			a10Offer(ashburn, "US-ASHBURN-AD-2"),
			a10Offer(frankfurt, ""),
			{Cloud: catalog.OCI, Region: ashburn, Zone: "US-ASHBURN-AD-1", InstanceType: a100, Market: catalog.OnDemand,
				GPUModel: "A100-80GB", GPUs: 8, VCPUs: 256, MemoryGiB: 2048, PriceMicros: 32000000},
		},
		Quotas:    []catalog.Quota{{Cloud: catalog.OCI, Name: a10Limit, Description: "A10 GPUs", Scope: catalog.RegionScope, Unit: catalog.GPUs}},
		QuotaUses: []catalog.QuotaUse{{Cloud: catalog.OCI, InstanceType: a10, Market: catalog.OnDemand, Quota: a10Limit, Per: 1}},
	}
}

type front struct {
	t      *testing.T
	world  *sim.World
	clock  *sim.ManualClock
	server *Server
	origin *url.URL
	client *http.Client

	// mu guards answers, the body of every answer the front gave, for
	// tests that look for what it must never send.
	mu      sync.Mutex
	answers bytes.Buffer
}

func newFront(t *testing.T, cfg sim.Config, opts Options) *front {
	t.Helper()
	clock := sim.NewManualClock(epoch)
	cfg.Clock = clock
	if cfg.Catalog == nil {
		cfg.Catalog = testCatalog()
	}
	w, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := New(w, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		if n := s.panics.Load(); n != 0 {
			t.Errorf("%d requests panicked", n)
		}
	})
	origin, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &front{t: t, world: w, clock: clock, server: s, origin: origin, client: ts.Client()}
}

// Do sends a request the SDK made for a regional endpoint to the front,
// as gpufleet's OCI provider does in emulator mode: the URL's scheme and
// host become the front's, and the Host stays the regional one the SDK
// signed.
func (f *front) Do(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.Host = r.URL.Host
	out.URL.Scheme, out.URL.Host = f.origin.Scheme, f.origin.Host
	resp, err := f.client.Do(out)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.answers.Write(body)
	f.answers.WriteByte('\n')
	f.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

var _ common.HTTPRequestDispatcher = (*front)(nil)

// configProvider is a configuration of the kind gpufleet makes for the
// emulator: fixed OCIDs and a key of its own.
func configProvider(region string, key *rsa.PrivateKey) common.ConfigurationProvider {
	return common.NewRawConfigurationProvider(tenancy, user, region, fingerprint, pemOf(key), nil)
}

func pemOf(key *rsa.PrivateKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
}

// noRetries is the client configuration of every test: a call is one
// request, so that an answer is the front's and not a retry's.
func noRetries() common.CustomClientConfiguration {
	policy := common.NoRetryPolicy()
	return common.CustomClientConfiguration{RetryPolicy: &policy}
}

func (f *front) computeIn(region string, key *rsa.PrivateKey) core.ComputeClient {
	f.t.Helper()
	c, err := core.NewComputeClientWithConfigurationProvider(configProvider(region, key))
	if err != nil {
		f.t.Fatal(err)
	}
	c.HTTPClient = f
	c.SetCustomClientConfiguration(noRetries())
	return c
}

// compute is a compute client of Ashburn, signing with the test key.
func (f *front) compute() core.ComputeClient { return f.computeIn(ashburn, testKey()) }

func (f *front) identity(region string) identity.IdentityClient {
	f.t.Helper()
	c, err := identity.NewIdentityClientWithConfigurationProvider(configProvider(region, testKey()))
	if err != nil {
		f.t.Fatal(err)
	}
	c.HTTPClient = f
	c.SetCustomClientConfiguration(noRetries())
	return c
}

// details is a launch of a shape in an availability domain, as gpufleet
// makes one: display name, tags, an SSH key and user data, an image and
// a subnet.
func details(ad, shape, name string) core.LaunchInstanceDetails {
	return core.LaunchInstanceDetails{
		AvailabilityDomain: common.String(ad),
		CompartmentId:      common.String(compartment),
		Shape:              common.String(shape),
		DisplayName:        common.String(name),
		FreeformTags:       map[string]string{"gpufleet.dev/owner": "test"},
		Metadata: map[string]string{
			"ssh_authorized_keys": sshKey,
			"user_data":           base64.StdEncoding.EncodeToString([]byte("#cloud-config\n")),
		},
		SourceDetails:     core.InstanceSourceViaImageDetails{ImageId: common.String(image)},
		CreateVnicDetails: &core.CreateVnicDetails{SubnetId: common.String(subnet)},
	}
}

func (f *front) launchWith(c core.ComputeClient, d core.LaunchInstanceDetails, token string) (core.LaunchInstanceResponse, error) {
	return c.LaunchInstance(context.Background(), core.LaunchInstanceRequest{LaunchInstanceDetails: d, OpcRetryToken: common.String(token)})
}

// launch launches an instance, failing the test on an error.
func (f *front) launch(d core.LaunchInstanceDetails, token string) core.Instance {
	f.t.Helper()
	resp, err := f.launchWith(f.compute(), d, token)
	if err != nil {
		f.t.Fatalf("launching %s in %s: %v", *d.Shape, *d.AvailabilityDomain, err)
	}
	return resp.Instance
}

func (f *front) get(id string) (core.Instance, error) {
	resp, err := f.compute().GetInstance(context.Background(), core.GetInstanceRequest{InstanceId: common.String(id)})
	return resp.Instance, err
}

// wantServiceError checks that err is the API's error as the SDK shows it
// to a caller, with the status and code, and an opc-request-id.
func wantServiceError(t *testing.T, err error, status int, code string) common.ServiceError {
	t.Helper()
	se, ok := common.IsServiceError(err)
	if !ok {
		t.Fatalf("got %v, want the service error %d %s", err, status, code)
	}
	if se.GetHTTPStatusCode() != status || se.GetCode() != code {
		t.Fatalf("got the service error %d %s (%s), want %d %s", se.GetHTTPStatusCode(), se.GetCode(), se.GetMessage(), status, code)
	}
	if se.GetOpcRequestID() == "" {
		t.Errorf("the error %d %s carries no opc-request-id", status, code)
	}
	return se
}

// answer is a raw response: its status, headers and body, and the error
// envelope when it is one.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    errorBody
}

// signed is a request to an OCI host signed by the SDK's own signer with
// a key, dated at a fixed moment.
func signed(t *testing.T, key *rsa.PrivateKey, method, host, path string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "https://"+host+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Date", epoch.Format(http.TimeFormat))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if err := common.DefaultRequestSigner(configProvider(ashburn, key)).Sign(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// send sends a raw request to the front and reads its answer.
func (f *front) send(req *http.Request) answer {
	f.t.Helper()
	resp, err := f.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(raw, &a.err); err != nil {
			f.t.Fatalf("%s %s answered %d with a body that is not JSON: %q", req.Method, req.URL.Path, resp.StatusCode, raw)
		}
		if resp.Header.Get("opc-request-id") == "" {
			f.t.Errorf("%s %s answered %d without an opc-request-id", req.Method, req.URL.Path, resp.StatusCode)
		}
	}
	return a
}

func wantAnswer(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.err.Code != code {
		t.Fatalf("answered %d %q (%s), want %d %s", a.status, a.err.Code, a.err.Message, status, code)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
