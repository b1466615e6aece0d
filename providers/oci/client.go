// SPDX-License-Identifier: Apache-2.0

package oci

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/core"
	"github.com/oracle/oci-go-sdk/v65/identity"

	"github.com/gpufleet/gpufleet/providers/outbound"
)

// newRegionClients makes a region's compute and identity clients, signing
// with provider, each sending only to its regional host, or to the
// emulator's origin when there is one.
func (p *Provider) newRegionClients(provider common.ConfigurationProvider, region string, origin *url.URL) (*regionClients, error) {
	compute, err := core.NewComputeClientWithConfigurationProvider(provider)
	if err != nil {
		return nil, fmt.Errorf("creating the compute client, %w", err)
	}
	compute.SetRegion(region)
	ident, err := identity.NewIdentityClientWithConfigurationProvider(provider)
	if err != nil {
		return nil, fmt.Errorf("creating the identity client, %w", err)
	}
	ident.SetRegion(region)
	for _, base := range []*common.BaseClient{&compute.BaseClient, &ident.BaseClient} {
		// The SDK fills in its host template's options (dual-stack) at
		// each call; filled in now, the host is the one requests go to.
		common.UpdateEndpointTemplateForOptions(base)
		common.SetMissingTemplateParams(base)
		// gpufleet's retry policy goes on each request (see call),
		// and no circuit breaker, which the SDK turns on from the
		// environment, stands between a call and its classified error.
		base.Configuration = common.CustomClientConfiguration{}
		d, err := p.dispatcher(base.Host, base.HTTPClient, origin)
		if err != nil {
			return nil, err
		}
		base.HTTPClient = d
	}
	return &regionClients{compute: compute, identity: ident}, nil
}

// dispatcher is what an SDK client whose host is host sends through: an
// HTTP client of outbound's, bounded per attempt and pinned to the host,
// so that a signed request never follows a redirect elsewhere. It carries
// requests through the transport of Options.HTTPClient, or else the SDK's
// own (which honours its custom certificate settings). With an emulator's
// origin, every request goes there instead, as emulatorDispatcher says.
func (p *Provider) dispatcher(host string, sdk common.HTTPRequestDispatcher, origin *url.URL) (common.HTTPRequestDispatcher, error) {
	var transport http.RoundTripper
	if hc, ok := sdk.(*http.Client); ok && origin == nil {
		transport = hc.Transport
	}
	if p.opts.HTTPClient != nil && p.opts.HTTPClient.Transport != nil {
		transport = p.opts.HTTPClient.Transport
	}
	if origin != nil {
		client := outbound.NewClient(outbound.Policy{Timeout: p.opts.Timeout, Origin: origin, Transport: transport})
		return emulatorDispatcher{origin: origin, next: client}, nil
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the SDK's endpoint %q is not a URL", host)
	}
	return regionalDispatcher{outbound.NewClient(outbound.Policy{Timeout: p.opts.Timeout, Origin: &url.URL{Scheme: u.Scheme, Host: u.Host}, Transport: transport})}, nil
}

// regionalDispatcher sends a request to the regional host the SDK
// addressed, in the call's own context (see call).
type regionalDispatcher struct{ next *http.Client }

func (d regionalDispatcher) Do(req *http.Request) (*http.Response, error) {
	return d.next.Do(withCallContext(req))
}

// emulatorDispatcher sends a signed request to the emulator's origin with
// the regional host it was addressed to as its Host header, in the call's
// own context (see call): the signature covers that host, and the
// emulator routes by it.
type emulatorDispatcher struct {
	origin *url.URL
	next   *http.Client
}

func (d emulatorDispatcher) Do(req *http.Request) (*http.Response, error) {
	out := withCallContext(req)
	if out == req {
		out = req.Clone(req.Context())
	}
	out.Host = req.URL.Host
	out.URL.Scheme, out.URL.Host = d.origin.Scheme, d.origin.Host
	return d.next.Do(out)
}
