// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// A stock-out is OCI's 500 InternalError "Out of host capacity.", as the
// SDK shows it to a caller.
func TestCapacity(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	f.world.SetCapacity(catalog.OCI, "US-ASHBURN-AD-1", a10, catalog.OnDemand, 1)
	f.launch(details(ad1, a10, "n"), "t1")
	_, err := f.launchWith(f.compute(), details(ad1, a10, "n"), "t2")
	se := wantServiceError(t, err, http.StatusInternalServerError, CodeInternalError)
	if se.GetMessage() != "Out of host capacity." {
		t.Errorf("a stock-out says %q", se.GetMessage())
	}
	if n := len(f.world.Instances()); n != 1 {
		t.Errorf("a refused launch left %d instances beside the first", n-1)
	}
	// Another domain has room.
	f.launch(details(ad2, a10, "n"), "t3")

	// A shape a domain does not offer is no stock-out but an invalid one.
	_, err = f.launchWith(f.compute(), details(ad2, a100, "n"), "t4")
	se = wantServiceError(t, err, http.StatusBadRequest, CodeInvalidParameter)
	if se.GetMessage() != "Shape "+a100+" is not valid for availability domain "+ad2+"." {
		t.Errorf("a shape the domain does not offer is refused with %q", se.GetMessage())
	}
}

// A launch over a service limit is OCI's 400 LimitExceeded, naming it.
func TestQuota(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	f.world.SetQuota(catalog.OCI, ashburn, a10Limit, 1)
	f.launch(details(ad1, a10, "n"), "t1")
	_, err := f.launchWith(f.compute(), details(ad2, a10, "n"), "t2")
	se := wantServiceError(t, err, http.StatusBadRequest, CodeLimitExceeded)
	if !strings.HasPrefix(se.GetMessage(), "The following service limits were exceeded: "+a10Limit) || !strings.Contains(se.GetMessage(), "limit 1") {
		t.Errorf("the limit error %q does not name the limit and its value", se.GetMessage())
	}
	// The limit is the region's: Frankfurt has its own.
	f.launchOn(f.computeIn(frankfurt, testKey()), details("gpuf:EU-FRANKFURT-1-AD-1", a10, "n"))
}

func TestRateLimits(t *testing.T) {
	f := newFront(t, sim.Config{}, Options{})
	if err := f.world.SetRateLimits(
		sim.RateLimit{Cloud: catalog.OCI, Class: sim.ClassGeneral, Rate: 1, Burst: 2},
		sim.RateLimit{Cloud: catalog.OCI, Class: sim.ClassLaunch, Rate: 0.25, Burst: 1},
	); err != nil {
		t.Fatal(err)
	}
	list := func(c core.ComputeClient) (core.ListInstancesResponse, error) {
		return c.ListInstances(context.Background(), core.ListInstancesRequest{CompartmentId: common.String(compartment)})
	}
	for range 2 {
		if _, err := list(f.compute()); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := list(f.compute())
	wantServiceError(t, err, http.StatusTooManyRequests, CodeTooManyRequests)
	if got := resp.RawResponse.Header.Get("Retry-After"); got != "1" {
		t.Errorf("a refusal of the general bucket says Retry-After %q, want 1", got)
	}
	// Each tenancy has buckets of its own.
	other, err := core.NewComputeClientWithConfigurationProvider(common.NewRawConfigurationProvider(
		"ocid1.tenancy.oc1..another", user, ashburn, fingerprint, pemOf(testKey()), nil))
	if err != nil {
		t.Fatal(err)
	}
	other.HTTPClient = f
	other.SetCustomClientConfiguration(noRetries())
	if _, err := list(other); err != nil {
		t.Errorf("another tenancy was refused: %v", err)
	}

	// Launches draw on a bucket of their own, one token each four seconds.
	f.launch(details(ad1, a10, "n"), "t1")
	lr, err := f.launchWith(f.compute(), details(ad1, a10, "n"), "t2")
	wantServiceError(t, err, http.StatusTooManyRequests, CodeTooManyRequests)
	if got := lr.RawResponse.Header.Get("Retry-After"); got != "4" {
		t.Errorf("a refusal of the launch bucket says Retry-After %q, want 4", got)
	}
	f.clock.Advance(4 * time.Second)
	f.launch(details(ad1, a10, "n"), "t2")
	if got := f.world.Throttled(); got["oci "+OpListInstances] != 1 || got["oci "+OpLaunchInstance] != 1 {
		t.Errorf("the world counts the refusals as %v", got)
	}

	// The default limits are valid world rules, and hold as declared.
	if err := f.world.SetRateLimits(DefaultRateLimits()...); err != nil {
		t.Fatal(err)
	}
	for range LaunchBurst {
		f.launch(details(ad1, a10, "n"), "")
	}
	_, err = f.launchWith(f.compute(), details(ad1, a10, "n"), "")
	wantServiceError(t, err, http.StatusTooManyRequests, CodeTooManyRequests)
}

func TestFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  sim.Fault
		status int
		code   string
		retry  string
	}{
		{"capacity", sim.Fault{Kind: sim.FaultCapacity}, http.StatusInternalServerError, CodeInternalError, ""},
		{"quota", sim.Fault{Kind: sim.FaultQuota}, http.StatusBadRequest, CodeLimitExceeded, ""},
		{"throttle", sim.Fault{Kind: sim.FaultThrottle}, http.StatusTooManyRequests, CodeTooManyRequests, "1"},
		{"server error", sim.Fault{Kind: sim.FaultServerError}, http.StatusInternalServerError, CodeInternalServerError, ""},
		{"server error as a 503", sim.Fault{Kind: sim.FaultServerError, Code: "503"}, http.StatusServiceUnavailable, CodeServiceUnavailable, ""},
		{"refused authentication", sim.Fault{Kind: sim.FaultServerError, Code: CodeNotAuthenticated}, http.StatusUnauthorized, CodeNotAuthenticated, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{})
			fault := c.fault
			fault.Cloud, fault.Op, fault.Region, fault.Zone, fault.InstanceType, fault.Times = catalog.OCI, OpLaunchInstance, ashburn, "US-ASHBURN-AD-1", a10, 1
			if err := f.world.AddFaults(&fault); err != nil {
				t.Fatal(err)
			}
			// A launch elsewhere does not match.
			f.launch(details(ad2, a10, "n"), "t1")
			resp, err := f.launchWith(f.compute(), details(ad1, a10, "n"), "t2")
			se := wantServiceError(t, err, c.status, c.code)
			if got := resp.RawResponse.Header.Get("Retry-After"); got != c.retry {
				t.Errorf("Retry-After %q, want %q", got, c.retry)
			}
			if c.code == CodeLimitExceeded && !strings.Contains(se.GetMessage(), a10Limit) {
				t.Errorf("the injected limit error %q does not name the limit the shape counts against", se.GetMessage())
			}
			if n := len(f.world.Instances()); n != 1 {
				t.Errorf("the faulted launch left %d instances beside the first", n-1)
			}
			f.launch(details(ad1, a10, "n"), "t2")
			if got := f.world.Calls()["oci "+OpLaunchInstance]; got != 3 {
				t.Errorf("the world counted %d launches, want 3", got)
			}
		})
	}

	t.Run("an answer lost", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		if err := f.world.AddFaults(&sim.Fault{Cloud: catalog.OCI, Op: OpLaunchInstance, Kind: sim.FaultFailLater, Times: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := f.launchWith(f.compute(), details(ad1, a10, "n"), "lost")
		wantServiceError(t, err, http.StatusInternalServerError, CodeInternalServerError)
		made := f.world.Instances()
		if len(made) != 1 {
			t.Fatalf("a launch whose answer was lost made %d instances, want 1", len(made))
		}
		// A retry with the token finds the instance rather than making
		// another.
		if inst := f.launch(details(ad1, a10, "n"), "lost"); *inst.Id != made[0].ID {
			t.Fatalf("the retry answered %s, want the instance the lost launch made, %s", *inst.Id, made[0].ID)
		}
		if n := len(f.world.Instances()); n != 1 {
			t.Errorf("the retry left %d instances, want 1", n)
		}
	})

	t.Run("every operation", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		if err := f.world.AddFaults(&sim.Fault{Cloud: catalog.OCI, Kind: sim.FaultServerError, Rate: 1}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ method, host, path string }{
			{"GET", "identity.us-ashburn-1.oci.oraclecloud.com", "/20160918/availabilityDomains?compartmentId=" + compartment},
			{"GET", computeHost, "/20160918/shapes?compartmentId=" + compartment},
			{"GET", computeHost, "/20160918/instances?compartmentId=" + compartment},
			{"GET", computeHost, "/20160918/instances/ocid1.instance.oc1.us-ashburn-1.x"},
			{"DELETE", computeHost, "/20160918/instances/ocid1.instance.oc1.us-ashburn-1.x"},
		} {
			wantAnswer(t, f.send(signed(t, testKey(), c.method, c.host, c.path, nil)), http.StatusInternalServerError, CodeInternalServerError)
		}
		wantAnswer(t, f.send(signed(t, testKey(), "POST", computeHost, "/20160918/instances", []byte("{}"))), http.StatusInternalServerError, CodeInternalServerError)
	})
}

func TestLaunchInvalid(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"availabilityDomain": ad1, "compartmentId": compartment, "shape": a10, "displayName": "n",
			"metadata":          map[string]string{"ssh_authorized_keys": sshKey},
			"sourceDetails":     map[string]string{"sourceType": "image", "imageId": image},
			"createVnicDetails": map[string]string{"subnetId": subnet},
		}
	}
	with := func(key string, v any) map[string]any {
		b := base()
		if v == nil {
			delete(b, key)
		} else {
			b[key] = v
		}
		return b
	}
	for _, c := range []struct {
		name  string
		body  any
		code  string
		param string
	}{
		{"no compartment", with("compartmentId", nil), CodeMissingParameter, "compartmentId"},
		{"no availability domain", with("availabilityDomain", nil), CodeMissingParameter, "availabilityDomain"},
		{"an availability domain of another region", with("availabilityDomain", "gpuf:EU-FRANKFURT-1-AD-1"), CodeInvalidParameter, "availabilityDomain"},
		{"no shape", with("shape", nil), CodeMissingParameter, "shape"},
		{"an unknown shape", with("shape", "VM.GPU.Z9.1"), CodeInvalidParameter, "shape"},
		{"no image", with("sourceDetails", nil), CodeMissingParameter, "sourceDetails.imageId"},
		{"a boot volume", with("sourceDetails", map[string]string{"sourceType": "bootVolume", "bootVolumeId": "ocid1.bootvolume.oc1..x"}), CodeInvalidParameter, "sourceDetails.sourceType"},
		{"no subnet", with("createVnicDetails", nil), CodeMissingParameter, "createVnicDetails.subnetId"},
		{"user data that is not base64", with("metadata", map[string]string{"user_data": "#cloud-config"}), CodeInvalidParameter, "metadata.user_data"},
		{"metadata over 32,000 bytes", with("metadata", map[string]string{"big": strings.Repeat("x", maxMetadata)}), CodeInvalidParameter, "metadata"},
		{"preemptible capacity", with("preemptibleInstanceConfig", map[string]any{"preemptionAction": map[string]any{"type": "TERMINATE"}}), CodeInvalidParameter, "preemptibleInstanceConfig"},
		{"a field of the wrong type", with("shape", 7), CodeInvalidParameter, "shape"},
		{"not JSON", "{", CodeCannotParseRequest, ""},
		{"no body", "", CodeCannotParseRequest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFront(t, sim.Config{}, Options{})
			body, ok := c.body.(string)
			if !ok {
				body = string(mustJSON(t, c.body))
			}
			a := f.send(signed(t, testKey(), "POST", computeHost, "/20160918/instances", []byte(body)))
			wantAnswer(t, a, http.StatusBadRequest, c.code)
			if !strings.Contains(a.err.Message, c.param) {
				t.Errorf("the error %q does not name %s", a.err.Message, c.param)
			}
			if n := len(f.world.Instances()); n != 0 {
				t.Errorf("a refused launch left %d instances", n)
			}
		})
	}
	t.Run("a retry token over 64 characters", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		_, err := f.launchWith(f.compute(), details(ad1, a10, "n"), strings.Repeat("t", 65))
		wantServiceError(t, err, http.StatusBadRequest, CodeInvalidParameter)
	})
	t.Run("the image and subnet in their older places", func(t *testing.T) {
		f := newFront(t, sim.Config{}, Options{})
		b := with("sourceDetails", nil)
		delete(b, "createVnicDetails")
		b["imageId"], b["subnetId"] = image, subnet
		a := f.send(signed(t, testKey(), "POST", computeHost, "/20160918/instances", mustJSON(t, b)))
		if a.status != http.StatusOK {
			t.Fatalf("answered %d %s", a.status, a.err.Message)
		}
	})
}
