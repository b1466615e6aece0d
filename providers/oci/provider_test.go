// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestNew(t *testing.T) {
	keys, err := testKeys()
	if err != nil {
		t.Fatal(err)
	}
	noCompartment := testConfig()
	noCompartment.Compartment = ""
	noRegions := testConfig()
	noRegions.Regions = nil
	for _, tt := range []struct {
		name string
		cfg  *schema.OCI
		cat  *catalog.Catalog
		opts Options
		want string
	}{
		{"not configured", nil, testCatalog(), Options{ConfigurationProvider: keys}, "not configured"},
		{"no compartment", noCompartment, testCatalog(), Options{ConfigurationProvider: keys}, "clouds.oci.compartment"},
		{"no regions", noRegions, testCatalog(), Options{ConfigurationProvider: keys}, "no regions"},
		{"no catalog", testConfig(), nil, Options{ConfigurationProvider: keys}, "no catalog"},
		{"plain http beyond loopback", testConfig(), testCatalog(), Options{Endpoint: "http://oci.example.com", ConfigurationProvider: keys}, "plain http"},
		{"an endpoint with a path", testConfig(), testCatalog(), Options{Endpoint: "http://127.0.0.1:9/20160918", ConfigurationProvider: keys}, "not an origin"},
	} {
		if _, err := New(context.Background(), tt.cfg, tt.cat, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}

	// Without credentials anywhere, the error says where they are read.
	t.Setenv("HOME", t.TempDir())
	t.Setenv("OCI_CONFIG_FILE", "")
	_, err = New(context.Background(), testConfig(), testCatalog(), Options{})
	if err == nil || !strings.Contains(err.Error(), "~/.oci/config") || !strings.Contains(err.Error(), "TF_VAR_tenancy_ocid") {
		t.Errorf("New without credentials: %v, want an error naming where they are read", err)
	}
}

// TestRealHosts: without an endpoint, each region's clients keep OCI's
// regional hosts, and send only there.
func TestRealHosts(t *testing.T) {
	keys, _ := testKeys()
	p, err := New(context.Background(), testConfig(), testCatalog(), Options{ConfigurationProvider: keys})
	if err != nil {
		t.Fatal(err)
	}
	for region, want := range map[string][2]string{
		ashburn:   {"https://iaas.us-ashburn-1.oraclecloud.com", "https://identity.us-ashburn-1.oci.oraclecloud.com"},
		frankfurt: {"https://iaas.eu-frankfurt-1.oraclecloud.com", "https://identity.eu-frankfurt-1.oci.oraclecloud.com"},
	} {
		c := p.clients[region]
		if c.compute.Host != want[0] || c.identity.Host != want[1] {
			t.Errorf("%s: hosts %s and %s, want %v", region, c.compute.Host, c.identity.Host, want)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://elsewhere.example.com/20160918/instances", nil)
		if _, err := c.compute.HTTPClient.Do(req); !errors.Is(err, outbound.ErrRefused) {
			t.Errorf("%s: a request to another host: %v, want it refused unsent", region, err)
		}
	}
}

// TestEmulatorKeySigns: a request the provider makes with
// EmulatorConfigProvider's key reaches the emulator's origin with the
// regional Host, and its signature verifies, over that host, against the
// key its keyId names.
func TestEmulatorKeySigns(t *testing.T) {
	keys, err := EmulatorConfigProvider()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := common.IsConfigurationProviderValid(keys); !ok {
		t.Fatalf("EmulatorConfigProvider is not a valid configuration: %v", err)
	}
	private, err := keys.PrivateRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	if private.N.BitLen() != 2048 {
		t.Errorf("a %d-bit key", private.N.BitLen())
	}
	fingerprint, _ := keyFingerprint(&private.PublicKey)
	keyID, _ := keys.KeyID()
	if keyID != emulatorTenancy+"/"+emulatorUser+"/"+fingerprint {
		t.Errorf("keyId %s", keyID)
	}
	var checked bool
	f := newFakeOCI()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/20160918/instances" && r.Method == http.MethodPost {
			checked = true
			if err := verify(r, keyID, &private.PublicKey); err != nil {
				t.Errorf("the launch's signature: %v", err)
			}
		}
		f.ServeHTTP(w, r)
	}))
	defer ts.Close()
	p, err := New(context.Background(), testConfig(), testCatalog(), Options{Endpoint: ts.URL, ConfigurationProvider: keys, RetryMax: 1, RetryWaitMin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(context.Background(), request("f", 0)); err != nil || !checked {
		t.Fatalf("Create through the emulator: %v (signature checked: %v)", err, checked)
	}
}

var signatureParam = regexp.MustCompile(`(\w+)="([^"]*)"`)

// verify checks an OCI HTTP signature as the emulator does: the signed
// headers' values, the request target and the host, joined by newlines,
// signed with RSA-SHA256 by the key keyId names.
func verify(r *http.Request, keyID string, public *rsa.PublicKey) error {
	params := map[string]string{}
	for _, m := range signatureParam.FindAllStringSubmatch(strings.TrimPrefix(r.Header.Get("Authorization"), "Signature "), -1) {
		params[m[1]] = m[2]
	}
	if params["keyId"] != keyID || params["algorithm"] != "rsa-sha256" {
		return fmt.Errorf("signed by %s with %s", params["keyId"], params["algorithm"])
	}
	var lines []string
	for _, h := range strings.Fields(params["headers"]) {
		switch h {
		case "(request-target)":
			lines = append(lines, h+": "+strings.ToLower(r.Method)+" "+r.URL.RequestURI())
		case "host":
			lines = append(lines, h+": "+r.Host)
		default:
			lines = append(lines, h+": "+r.Header.Get(h))
		}
	}
	sig, err := base64.StdEncoding.DecodeString(params["signature"])
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return rsa.VerifyPKCS1v15(public, crypto.SHA256, digest[:], sig)
}

// TestTLS: an emulator on https is reached through Options.HTTPClient's
// transport, which trusts its certificate.
func TestTLS(t *testing.T) {
	f := newFakeOCI()
	ts := httptest.NewUnstartedServer(f)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	keys, _ := testKeys()
	p, err := New(context.Background(), testConfig(), testCatalog(), Options{Endpoint: ts.URL, ConfigurationProvider: keys, HTTPClient: ts.Client(), RetryMax: 1, RetryWaitMin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(context.Background(), providers.Selector{}); err != nil {
		t.Fatalf("List over TLS: %v", err)
	}
	// Without it, the certificate is refused, and not retried: one
	// attempt for the one region's list.
	attempts := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	untrusting, err := New(context.Background(), ashburnOnly(), testCatalog(), Options{Endpoint: ts.URL, ConfigurationProvider: keys,
		HTTPClient: &http.Client{Transport: attempts}, RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.List(context.Background(), providers.Selector{}); err == nil {
		t.Fatal("List trusted a certificate nobody vouched for")
	}
	if n := attempts.n.Load(); n != 1 {
		t.Errorf("%d attempts past a refused certificate, want 1", n)
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestOffers: the catalog's on-demand offers in the configured regions.
func TestOffers(t *testing.T) {
	cat := testCatalog()
	cat.Offers = append(cat.Offers,
		catalog.Offer{Cloud: Name, Region: ashburn, Zone: "US-ASHBURN-AD-1", InstanceType: a10, Market: catalog.Spot, GPUModel: "A10", GPUs: 1, PriceMicros: 1000000},
		catalog.Offer{Cloud: Name, Region: "ap-tokyo-1", Zone: "AP-TOKYO-1-AD-1", InstanceType: a10, Market: catalog.OnDemand, GPUModel: "A10", GPUs: 1, PriceMicros: 2000000})
	keys, _ := testKeys()
	p, err := New(context.Background(), testConfig(), cat, Options{ConfigurationProvider: keys})
	if err != nil {
		t.Fatal(err)
	}
	offers, err := p.Offers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) != 5 {
		t.Errorf("%d offers, want the catalog's 5 on-demand ones in the two regions", len(offers))
	}
	for _, o := range offers {
		if o.Market != catalog.OnDemand || o.Region == "ap-tokyo-1" || o.Available != planner.Unlimited {
			t.Errorf("offered %s with %d available", o.OfferKey, o.Available)
		}
	}
}

// TestBackoff: the pause doubles from the least wait, with half of it
// random, and a Retry-After is honoured, each within the most.
func TestBackoff(t *testing.T) {
	p := &Provider{opts: Options{RetryWaitMin: 100 * time.Millisecond, RetryWaitMax: time.Second}.withDefaults()}
	for attempt, bounds := range map[uint][2]time.Duration{1: {50 * time.Millisecond, 100 * time.Millisecond}, 3: {200 * time.Millisecond, 400 * time.Millisecond}, 40: {500 * time.Millisecond, time.Second}} {
		for range 20 {
			if d := p.backoff(common.OCIOperationResponse{AttemptNumber: attempt}); d < bounds[0] || d > bounds[1] {
				t.Errorf("attempt %d waits %s, want %s to %s", attempt, d, bounds[0], bounds[1])
			}
		}
	}
	throttled := core.ListInstancesResponse{RawResponse: &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}}}
	if d := p.backoff(common.OCIOperationResponse{AttemptNumber: 1, Response: throttled}); d != time.Second {
		t.Errorf("a Retry-After of 5 s waits %s, want the most, 1 s", d)
	}
	throttled.RawResponse.Header.Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	if d, ok := retryAfter(throttled, time.Now()); !ok || d < 59*time.Minute {
		t.Errorf("a Retry-After as a date: %s, %v", d, ok)
	}
	if d, ok := retryAfter(nil, time.Now()); ok || d != 0 {
		t.Errorf("retryAfter without an answer: %s, %v", d, ok)
	}
}
