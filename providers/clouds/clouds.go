// SPDX-License-Identifier: Apache-2.0

package clouds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"google.golang.org/api/option"

	"github.com/gpufleet/gpufleet/providers"
	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/azure"
	"github.com/gpufleet/gpufleet/providers/gcp"
	"github.com/gpufleet/gpufleet/providers/lambda"
	"github.com/gpufleet/gpufleet/providers/oci"
	"github.com/gpufleet/gpufleet/providers/outbound"
	"github.com/gpufleet/gpufleet/schema"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Endpoints override the clouds' APIs; an empty field means the real one.
type Endpoints struct {
	AWS, Azure, GCP, Lambda, OCI string
	// AllowHTTP lets an endpoint beyond loopback be plain http.
	AllowHTTP bool
}

// EndpointsFromEnv reads GPUFLEET_AWS_ENDPOINT, GPUFLEET_AZURE_ENDPOINT,
// GPUFLEET_GCP_ENDPOINT, GPUFLEET_LAMBDA_ENDPOINT and
// GPUFLEET_OCI_ENDPOINT, as `gpufleet sim serve` prints them, and
// outbound.AllowHTTPEnv.
func EndpointsFromEnv() Endpoints {
	return Endpoints{
		AWS:       os.Getenv("GPUFLEET_AWS_ENDPOINT"),
		Azure:     os.Getenv("GPUFLEET_AZURE_ENDPOINT"),
		GCP:       os.Getenv("GPUFLEET_GCP_ENDPOINT"),
		Lambda:    os.Getenv("GPUFLEET_LAMBDA_ENDPOINT"),
		OCI:       os.Getenv("GPUFLEET_OCI_ENDPOINT"),
		AllowHTTP: outbound.AllowHTTP(os.Getenv),
	}
}

// Set is the providers of the enabled clouds.
type Set struct {
	Providers map[string]providers.Provider
	closers   []io.Closer
}

// Close releases the providers' clients.
func (s *Set) Close() error {
	var err error
	for _, c := range s.closers {
		err = errors.Join(err, c.Close())
	}
	return err
}

// New builds a provider for each enabled cloud. An endpoint on loopback is
// the emulator, which takes any credentials: it gets throwaway ones, so the
// demo needs no account, and real credentials never reach it.
func New(ctx context.Context, cfg schema.Config, cat *catalog.Catalog, ep Endpoints) (*Set, error) {
	set := &Set{Providers: map[string]providers.Provider{}}
	named := map[string]string{catalog.AWS: ep.AWS, catalog.Azure: ep.Azure, catalog.GCP: ep.GCP, catalog.Lambda: ep.Lambda, catalog.OCI: ep.OCI}
	for _, cloud := range cfg.Clouds.Enabled() {
		// Beyond loopback the real credentials go with every call.
		if e := named[cloud]; e != "" {
			if _, err := outbound.CheckURL(e, ep.AllowHTTP); err != nil {
				set.Close()
				return nil, fmt.Errorf("setting up %s, the endpoint %q %w", cloud, e, err)
			}
		}
		var (
			p   providers.Provider
			err error
		)
		switch cloud {
		case catalog.AWS:
			opts := aws.Options{Endpoint: ep.AWS}
			if loopback(ep.AWS) {
				opts.Credentials = credentials.NewStaticCredentialsProvider("gpufleet-emulator", "gpufleet-emulator", "")
				// The SDK races its own request bodies against a server as
				// quick as the emulator; this client sidesteps it.
				opts.HTTPClient = aws.LoopbackHTTPClient()
				opts.MaxBackoff = emulatorBackoff
			}
			p, err = aws.New(ctx, cfg.Clouds.AWS, cat, opts)
		case catalog.Azure:
			opts := azure.Options{Endpoint: ep.Azure}
			if loopback(ep.Azure) {
				opts.Credential = &azfake.TokenCredential{}
				opts.Retry = policy.RetryOptions{RetryDelay: emulatorBackoff / 4, MaxRetryDelay: 2 * time.Second}
			}
			p, err = azure.New(ctx, cfg.Clouds.Azure, cat, opts)
		case catalog.GCP:
			opts := gcp.Options{Endpoint: ep.GCP}
			if loopback(ep.GCP) {
				opts.ClientOptions = []option.ClientOption{option.WithoutAuthentication()}
				opts.RetryBase, opts.RetryMax, opts.OperationPoll = emulatorBackoff/4, emulatorBackoff, emulatorBackoff/4
			}
			p, err = gcp.New(ctx, cfg.Clouds.GCP, cat, opts)
		case catalog.Lambda:
			opts := lambda.Options{Endpoint: ep.Lambda, AllowHTTP: ep.AllowHTTP}
			if loopback(ep.Lambda) {
				opts.APIKey = emulatorAPIKey
				opts.RetryWaitMin, opts.RetryWaitMax = emulatorBackoff/4, emulatorBackoff
			}
			p, err = lambda.New(ctx, cfg.Clouds.Lambda, cat, opts)
		case catalog.OCI:
			opts := oci.Options{Endpoint: ep.OCI, AllowHTTP: ep.AllowHTTP}
			if loopback(ep.OCI) {
				// A key made for this run signs the emulator's requests;
				// the real one, in ~/.oci/config, never goes there.
				if opts.ConfigurationProvider, err = oci.EmulatorConfigProvider(); err != nil {
					break
				}
				opts.RetryWaitMin, opts.RetryWaitMax = emulatorBackoff/4, emulatorBackoff
			}
			p, err = oci.New(ctx, cfg.Clouds.OCI, cat, opts)
		default:
			err = fmt.Errorf("gpufleet has no provider for cloud %q", cloud)
		}
		if err != nil {
			set.Close()
			return nil, fmt.Errorf("setting up %s, %w", cloud, err)
		}
		set.Providers[cloud] = p
		if c, ok := p.(io.Closer); ok {
			set.closers = append(set.closers, c)
		}
	}
	return set, nil
}

// emulatorAPIKey is the Lambda API key the emulator gets, which takes any:
// the real one, from LAMBDA_API_KEY, never goes there.
const emulatorAPIKey = "gpufleet-emulator"

// emulatorBackoff caps retry waits against the emulator, which needs no
// real backing off: demos and tests stay quick under injected faults.
const emulatorBackoff = 200 * time.Millisecond

// loopback reports whether an endpoint is on this machine.
func loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return endpoint != "" && err == nil && outbound.Loopback(u.Hostname())
}
