// SPDX-License-Identifier: Apache-2.0

package azure

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestClientOptions(t *testing.T) {
	fake := &azfake.TokenCredential{}
	tests := []struct {
		name         string
		opts         Options
		wantErr      string
		wantInsecure bool
		wantOverride bool
	}{
		{name: "real Azure", opts: Options{}},
		{name: "a credential without an endpoint", opts: Options{Credential: fake}, wantErr: "for the emulator"},
		{name: "emulator on 127.0.0.1", opts: Options{Endpoint: "http://127.0.0.1:8443", Credential: fake}, wantInsecure: true, wantOverride: true},
		{name: "emulator on localhost", opts: Options{Endpoint: "http://localhost:8443"}, wantInsecure: true, wantOverride: true},
		{name: "emulator on ::1", opts: Options{Endpoint: "http://[::1]:8443"}, wantInsecure: true, wantOverride: true},
		{name: "https elsewhere", opts: Options{Endpoint: "https://arm.example.test"}, wantOverride: true},
		{name: "plain http elsewhere", opts: Options{Endpoint: "http://10.0.0.7:8443"}, wantErr: "loopback only"},
		{name: "plain http to a name", opts: Options{Endpoint: "http://arm.example.test"}, wantErr: "loopback only"},
		{name: "not a URL", opts: Options{Endpoint: "127.0.0.1:8443"}, wantErr: "not an http(s) URL"},
		{name: "another scheme", opts: Options{Endpoint: "ftp://127.0.0.1"}, wantErr: "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			co, err := clientOptions(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if co.InsecureAllowCredentialWithHTTP != tt.wantInsecure {
				t.Errorf("InsecureAllowCredentialWithHTTP %v", co.InsecureAllowCredentialWithHTTP)
			}
			if overridden := len(co.Cloud.Services) > 0; overridden != tt.wantOverride || co.DisableRPRegistration != tt.wantOverride {
				t.Errorf("cloud %+v, DisableRPRegistration %v", co.Cloud, co.DisableRPRegistration)
			}
		})
	}
}

func TestRetryDefaults(t *testing.T) {
	co, err := clientOptions(Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := policy.RetryOptions{MaxRetries: 4, RetryDelay: time.Second, MaxRetryDelay: 15 * time.Second, TryTimeout: 15 * time.Second}
	r := co.Retry
	if r.MaxRetries != want.MaxRetries || r.RetryDelay != want.RetryDelay || r.MaxRetryDelay != want.MaxRetryDelay || r.TryTimeout != want.TryTimeout {
		t.Errorf("defaults %+v, want %+v", r, want)
	}
	// The bound the Options comment promises: tries plus waits.
	if worst := time.Duration(r.MaxRetries+1)*r.TryTimeout + time.Duration(r.MaxRetries)*r.MaxRetryDelay; worst > 150*time.Second {
		t.Errorf("a call may take %s", worst)
	}

	co, _ = clientOptions(Options{Retry: policy.RetryOptions{MaxRetries: -1, MaxRetryDelay: time.Second}})
	if co.Retry.MaxRetries != -1 || co.Retry.MaxRetryDelay != time.Second || co.Retry.TryTimeout != 15*time.Second {
		t.Errorf("given values were not kept: %+v", co.Retry)
	}
}

func TestNew(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, nil, catalog.Default(), Options{}); err == nil {
		t.Error("New without a config succeeded")
	}
	cfg := testConfig()
	cfg.ResourceGroup = ""
	if _, err := New(ctx, cfg, catalog.Default(), Options{}); err == nil {
		t.Error("New without a resource group succeeded")
	}
	if _, err := New(ctx, testConfig(), catalog.Default(), Options{PollFrequency: -time.Second}); err == nil {
		t.Error("New with a negative poll frequency succeeded")
	}

	// No regions means the catalog's, as the config loader fills them.
	cfg = testConfig()
	cfg.Regions = nil
	p, err := New(ctx, cfg, catalog.Default(), Options{Endpoint: "http://127.0.0.1:1", Credential: &azfake.TokenCredential{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.regions) != len(catalog.Default().RegionsOf(catalog.Azure)) || p.poll != defaultPollFrequency {
		t.Errorf("regions %v poll %s", p.regions, p.poll)
	}
	if p.Name() != "azure" {
		t.Errorf("name %q", p.Name())
	}
}

func TestOffers(t *testing.T) {
	p, err := New(context.Background(), testConfig(), catalog.Default(), Options{Endpoint: "http://127.0.0.1:1", Credential: &azfake.TokenCredential{}})
	if err != nil {
		t.Fatal(err)
	}
	offers, err := p.Offers(context.Background())
	if err != nil || len(offers) == 0 {
		t.Fatalf("%d offers, %v", len(offers), err)
	}
	var regions []string
	for _, o := range offers {
		if o.Cloud != catalog.Azure || !strings.HasPrefix(o.Zone, o.Region+"-") {
			t.Errorf("offer %s", o.OfferKey)
		}
		if !slices.Contains(regions, o.Region) {
			regions = append(regions, o.Region)
		}
	}
	slices.Sort(regions)
	if !slices.Equal(regions, []string{"eastus", "westus3"}) {
		t.Errorf("offers in %v, want the configured regions", regions)
	}
}
