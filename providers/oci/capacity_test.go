// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers"
)

// TestCapacity: each zone's offerings are the catalog's shapes its
// availability domain lists, sorted, zones sorted; quotas are not read,
// which one warning says, and only once.
func TestCapacity(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.pageSize = 1
	got, err := b.provider.Capacity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []providers.ZoneOffering{
		{Zone: "EU-FRANKFURT-1-AD-1", Types: []string{a10}},
		{Zone: "US-ASHBURN-AD-1", Types: []string{a10, a10x2}},
		{Zone: "US-ASHBURN-AD-2", Types: []string{a10}},
		// The catalog sells a V100 there; OCI offers it no more.
		{Zone: "US-ASHBURN-AD-3", Types: []string{}},
	}
	if !slices.EqualFunc(got.Offerings, want, equalOffering) {
		t.Errorf("offerings %v, want %v", got.Offerings, want)
	}
	if len(got.Quotas) != 0 || len(got.Warnings) != 1 || got.Warnings[0] != limitsNotRead {
		t.Errorf("quotas %v and warnings %q, want none and the one about service limits", got.Quotas, got.Warnings)
	}
}

// TestCapacityDenied: a read OCI refuses leaves its zones unknown, with a
// warning naming what may be missing; a zone the tenancy lacks is
// unknown too. Neither fails the call.
func TestCapacityDenied(t *testing.T) {
	b := newFakeBackend(t)
	b.oci.mu.Lock()
	b.oci.ads[ashburn] = b.oci.ads[ashburn][:2]
	b.oci.mu.Unlock()
	b.oci.fail("ListShapes", 1, fakeFault{status: http.StatusNotFound, code: "NotAuthorizedOrNotFound", message: "Authorization failed or requested resource not found."})
	got, err := b.provider.Capacity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Offerings) != 2 {
		t.Errorf("offerings %v, want two of the four zones", got.Offerings)
	}
	text := strings.Join(got.Warnings, "\n")
	if len(got.Warnings) != 3 || !strings.Contains(text, "US-ASHBURN-AD-3 of region us-ashburn-1 is none of the tenancy's") || !strings.Contains(text, "IAM policies") {
		t.Errorf("warnings %q", got.Warnings)
	}

	b.oci.fail("ListAvailabilityDomains", 100, fakeFault{status: http.StatusServiceUnavailable, code: "ServiceUnavailable", message: "down"})
	fresh := newTestProvider(t, testConfig(), b.url)
	got, err = fresh.Capacity(context.Background())
	if err != nil || len(got.Offerings) != 0 || len(got.Warnings) != 3 {
		t.Errorf("Capacity with identity down: %+v, %v; want no offerings and a warning for each region", got, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.provider.Capacity(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Capacity with a cancelled context: %v", err)
	}
}

// TestPreflight: a launch the domain's shapes do not include would meet
// a stock-out that lasts; one of a zone that is none of the tenancy's,
// or without an image, is invalid.
func TestPreflight(t *testing.T) {
	b := newFakeBackend(t)
	ctx := context.Background()
	if err := b.provider.Preflight(ctx, testOffer); err != nil {
		t.Errorf("Preflight: %v", err)
	}
	offer := testOffer
	offer.Zone = "US-ASHBURN-AD-3"
	if err := b.provider.Preflight(ctx, offer); !errors.Is(err, providers.ErrCapacity) {
		t.Errorf("Preflight of a shape the domain lacks: %v, want capacity", err)
	}
	offer.Zone = "US-ASHBURN-AD-9"
	if err := b.provider.Preflight(ctx, offer); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("Preflight of an unknown zone: %v, want invalid", err)
	}
	cfg := testConfig()
	delete(cfg.Launch.ImageByRegion, ashburn)
	if err := newTestProvider(t, cfg, b.url).Preflight(ctx, testOffer); !errors.Is(err, providers.ErrInvalid) {
		t.Errorf("Preflight without an image: %v, want invalid", err)
	}
	if n := b.oci.calls("LaunchInstance"); n != 0 {
		t.Errorf("preflights launched %d instances", n)
	}
}

func equalOffering(a, b providers.ZoneOffering) bool {
	return a.Zone == b.Zone && slices.Equal(a.Types, b.Types)
}
