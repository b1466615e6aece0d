// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/planner"
	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// TestLaunchRequest: a create lists the node's name in its availability
// domain, then sends one LaunchInstance as OCI takes it, signed for the
// regional host, with the bootstrap in base64 as user_data, the SSH key,
// the region's image and subnet, the ownership tags beside the labels,
// and a retry token derived from the create's.
func TestLaunchRequest(t *testing.T) {
	const secret = "#cloud-config\nwrite_files: [{path: /etc/token, content: s3cr3t-value}]\n"
	cfg := testConfig()
	cfg.Launch.SSHPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIgpufleet ops@example"
	cfg.Launch.DiskGB = 200
	b := newFakeBackendWith(t, cfg)
	req := request("f", 0)
	req.Labels = map[string]string{"team": "ml", providers.TagFleet: "not-this"}
	req.Bootstrap = &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte(secret), Digest: "0123456789ab"}
	inst, err := b.provider.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	name := providers.InstanceName("f", "w", req.Token)
	want := providers.Instance{ID: inst.ID, OfferKey: testOffer, Fleet: "f", Workload: "w", Token: req.Token, Bootstrap: "0123456789ab", State: planner.StatePending, LaunchedAt: inst.LaunchedAt}
	if inst != want || inst.LaunchedAt.IsZero() {
		t.Errorf("Create returned %+v, want %+v", inst, want)
	}

	lists := b.oci.recorded("ListInstances")
	if len(lists) != 1 || lists[0].query["displayName"] != name || lists[0].query["availabilityDomain"] != tenancyPrefix+testOffer.Zone || lists[0].query["compartmentId"] != testCompartment {
		t.Errorf("the create listed %+v, want one list of %s in its availability domain", lists, name)
	}
	launches := b.oci.recorded("LaunchInstance")
	if len(launches) != 1 {
		t.Fatalf("%d launches", len(launches))
	}
	l := launches[0]
	if l.host != "iaas.us-ashburn-1.oraclecloud.com" {
		t.Errorf("the launch went with Host %q, want the regional host", l.host)
	}
	if got := l.header.Get("opc-retry-token"); got != "gpufleet-"+req.Token {
		t.Errorf("opc-retry-token %q", got)
	}
	auth := l.header.Get("Authorization")
	keys, _ := testKeys()
	keyID, _ := keys.KeyID()
	if !strings.HasPrefix(auth, "Signature ") || !strings.Contains(auth, `keyId="`+keyID+`"`) || !strings.Contains(auth, `algorithm="rsa-sha256"`) ||
		!strings.Contains(auth, `headers="date (request-target) host content-length content-type x-content-sha256"`) || l.header.Get("x-content-sha256") == "" {
		t.Errorf("the launch is not signed as OCI wants: %s", auth)
	}
	var body struct {
		AvailabilityDomain string            `json:"availabilityDomain"`
		CompartmentID      string            `json:"compartmentId"`
		Shape              string            `json:"shape"`
		DisplayName        string            `json:"displayName"`
		FreeformTags       map[string]string `json:"freeformTags"`
		Metadata           map[string]string `json:"metadata"`
		SourceDetails      map[string]any    `json:"sourceDetails"`
		CreateVnicDetails  map[string]any    `json:"createVnicDetails"`
	}
	if err := json.Unmarshal(l.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.AvailabilityDomain != tenancyPrefix+testOffer.Zone || body.CompartmentID != testCompartment || body.Shape != a10 || body.DisplayName != name {
		t.Errorf("launched %s", l.body)
	}
	tags := body.FreeformTags
	if tags["team"] != "ml" || tags[providers.TagFleet] != "f" || tags[providers.TagWorkload] != "w" || tags[providers.TagToken] != req.Token || tags[providers.TagBootstrap] != "0123456789ab" {
		t.Errorf("launched with tags %v", tags)
	}
	if data, _ := base64.StdEncoding.DecodeString(body.Metadata["user_data"]); string(data) != secret || body.Metadata["ssh_authorized_keys"] != cfg.Launch.SSHPublicKey {
		t.Errorf("launched with metadata %v", body.Metadata)
	}
	if s := body.SourceDetails; s["sourceType"] != "image" || s["imageId"] != cfg.Launch.ImageByRegion[ashburn] || s["bootVolumeSizeInGBs"] != 200.0 {
		t.Errorf("launched with source %v", s)
	}
	if body.CreateVnicDetails["subnetId"] != cfg.Launch.SubnetByRegion[ashburn] {
		t.Errorf("launched with VNIC %v", body.CreateVnicDetails)
	}

	// A failed launch does not show the bootstrap.
	b.oci.fail("LaunchInstance", 1, fakeFault{status: http.StatusInternalServerError, code: "InternalError", message: "Out of host capacity."})
	req = request("f", 1)
	req.Bootstrap = &providers.Bootstrap{Format: schema.BootstrapCloudInit, Data: []byte(secret)}
	if _, err := b.provider.Create(context.Background(), req); err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(secret))[:20]) {
		t.Fatalf("a failed launch: %v, which must not show the bootstrap", err)
	}
}

// TestLaunchWithoutExtras: without a bootstrap, an SSH key or a disk size,
// the launch carries no metadata and leaves the boot volume's size to the
// image.
func TestLaunchWithoutExtras(t *testing.T) {
	b := newFakeBackend(t)
	if _, err := b.provider.Create(context.Background(), request("f", 0)); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(b.oci.recorded("LaunchInstance")[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["metadata"]; ok {
		t.Errorf("launched with metadata %v", body["metadata"])
	}
	if s, _ := body["sourceDetails"].(map[string]any); s["bootVolumeSizeInGBs"] != nil {
		t.Errorf("launched with source %v", s)
	}
}

// TestRepeatedCreate: a repeat returns the first instance, found by the
// list before any launch, within the retry token's day or after it, and
// from a process started anew.
func TestRepeatedCreate(t *testing.T) {
	b := newFakeBackend(t)
	ctx := context.Background()
	req := request("f", 0)
	first, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.provider.Create(ctx, req)
	if err != nil || again.ID != first.ID {
		t.Fatalf("a repeated Create returned %+v, %v; want %s", again, err, first.ID)
	}
	b.oci.forgetTokens()
	restarted := newTestProvider(t, testConfig(), b.url)
	third, err := restarted.Create(ctx, req)
	if err != nil || third.ID != first.ID {
		t.Fatalf("a Create after the token's day, in a new process, returned %+v, %v; want %s", third, err, first.ID)
	}
	if n := b.oci.calls("LaunchInstance"); n != 1 {
		t.Errorf("three creates of one token launched %d times", n)
	}
	// Another instance of the same display name, without the token, is
	// not the create's.
	b.oci.put(ashburn, testOffer.Zone, a10, core.InstanceLifecycleStateRunning, map[string]string{"owner": "someone"})
	other, err := b.provider.Create(ctx, request("f", 1))
	if err != nil || other.ID == first.ID {
		t.Fatalf("another slot's Create returned %+v, %v", other, err)
	}
	// Availability domains are read once per region and process.
	if n := b.oci.calls("ListAvailabilityDomains"); n != 2 {
		t.Errorf("four creates in two processes read the availability domains %d times, want twice", n)
	}
}

// TestTokenSpent: once a token's instance has ended, a create of that
// token launches nothing and says the token is spent; so does a retry
// token OCI answers with a conflict.
func TestTokenSpent(t *testing.T) {
	b := newFakeBackend(t)
	ctx := context.Background()
	req := request("f", 0)
	first, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, state := range []core.InstanceLifecycleStateEnum{core.InstanceLifecycleStateTerminating, core.InstanceLifecycleStateTerminated} {
		b.oci.setState(first.ID, state)
		if _, err := b.provider.Create(ctx, req); !errors.Is(err, providers.ErrTokenSpent) {
			t.Errorf("Create of a token whose instance is %s: %v, want token-spent", state, err)
		}
	}
	if n := b.oci.calls("LaunchInstance"); n != 1 {
		t.Errorf("launched %d times", n)
	}

	// The list misses it (OCI stopped listing it), and the launch's
	// configuration changed since: OCI refuses the retry token.
	b.oci.mu.Lock()
	b.oci.instances = nil
	b.oci.mu.Unlock()
	cfg := testConfig()
	cfg.Launch.ImageByRegion[ashburn] = "ocid1.image.oc1.iad.newer"
	changed := newTestProvider(t, cfg, b.url)
	if _, err := changed.Create(ctx, req); !errors.Is(err, providers.ErrTokenSpent) {
		t.Errorf("Create with the retry token spent on another launch: %v, want token-spent", err)
	}
}

// TestCreateListFails: the list is what makes a repeat past the retry
// token's day safe; without it nothing is launched.
func TestCreateListFails(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.fail("ListInstances", 10, fakeFault{status: http.StatusServiceUnavailable, code: "ServiceUnavailable", message: "down"})
	if _, err := b.provider.Create(context.Background(), request("f", 0)); !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("Create with the list failing: %v, want unavailable", err)
	}
	if n := b.oci.calls("LaunchInstance"); n != 0 {
		t.Errorf("launched %d times without a list", n)
	}
}

// TestLaunchRetried: a launch that failed in OCI is sent again with the
// same retry token, which makes the repeat safe.
func TestLaunchRetried(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.fail("LaunchInstance", 2, fakeFault{status: http.StatusServiceUnavailable, code: "ServiceUnavailable", message: "down"})
	if _, err := b.provider.Create(context.Background(), request("f", 0)); err != nil {
		t.Fatal(err)
	}
	launches := b.oci.recorded("LaunchInstance")
	if len(launches) != 3 {
		t.Fatalf("%d launch attempts, want 3", len(launches))
	}
	for _, l := range launches {
		if l.header.Get("opc-retry-token") != launches[0].header.Get("opc-retry-token") {
			t.Errorf("the attempts carry different retry tokens")
		}
	}
}

// TestRefusedCreates: creates OCI or gpufleet cannot make are invalid, and
// make no call.
func TestRefusedCreates(t *testing.T) {
	b := newFakeBackend(t)
	with := func(change func(*providers.CreateRequest)) providers.CreateRequest {
		req := request("f", 0)
		change(&req)
		return req
	}
	for name, req := range map[string]providers.CreateRequest{
		"another cloud":           with(func(r *providers.CreateRequest) { r.Offer.Cloud = catalog.AWS }),
		"a region not configured": with(func(r *providers.CreateRequest) { r.Offer.Region = "ap-tokyo-1" }),
		"spot":                    with(func(r *providers.CreateRequest) { r.Offer.Market = catalog.Spot }),
		"no token":                with(func(r *providers.CreateRequest) { r.Token = "" }),
		"a token too long":        with(func(r *providers.CreateRequest) { r.Token = strings.Repeat("t", 60) }),
		"a placement group":       with(func(r *providers.CreateRequest) { r.PlacementGroup = "g" }),
		"EFAs":                    with(func(r *providers.CreateRequest) { r.EFA = 1 }),
		"an unknown bootstrap format": with(func(r *providers.CreateRequest) {
			r.Bootstrap = &providers.Bootstrap{Format: "ignition", Data: []byte("{}")}
		}),
		"a bootstrap over OCI's metadata": with(func(r *providers.CreateRequest) {
			r.Bootstrap = &providers.Bootstrap{Format: schema.BootstrapScript, Data: []byte("#!/bin/sh\n" + strings.Repeat("s3cr3t ", 4000))}
		}),
	} {
		_, err := b.provider.Create(context.Background(), req)
		if !errors.Is(err, providers.ErrInvalid) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want an invalid error", name, err)
		}
	}
	for name, cfg := range map[string]func(*schema.OCI){
		"no image":  func(c *schema.OCI) { delete(c.Launch.ImageByRegion, ashburn) },
		"no subnet": func(c *schema.OCI) { delete(c.Launch.SubnetByRegion, ashburn) },
	} {
		c := testConfig()
		cfg(c)
		p := newTestProvider(t, c, b.url)
		if _, err := p.Create(context.Background(), request("f", 0)); !errors.Is(err, providers.ErrInvalid) || !strings.Contains(err.Error(), "clouds.oci.launch.") {
			t.Errorf("%s: %v, want an invalid error naming the setting", name, err)
		}
	}
	if n := len(b.oci.recorded("LaunchInstance")) + len(b.oci.recorded("ListInstances")); n != 0 {
		t.Errorf("refused creates made %d calls", n)
	}
}
