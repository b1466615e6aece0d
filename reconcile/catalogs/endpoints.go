// SPDX-License-Identifier: Apache-2.0

package catalogs

import (
	"net"
	"net/url"
	"os"
	"time"

	"github.com/gpufleet/gpufleet/providers/prices"
)

// Endpoints override the price APIs' base URLs; an empty field means the
// cloud's real API.
type Endpoints struct {
	AWSPricing string
	// EC2 serves the spot price history.
	EC2         string
	AzurePrices string
	GCPBilling  string
	// Lambda is Lambda Cloud's API, whose instance types carry the prices.
	Lambda string
}

// EndpointsFromEnv reads GPUFLEET_AWS_PRICING_ENDPOINT, GPUFLEET_AWS_ENDPOINT
// (EC2, for spot prices), GPUFLEET_AZURE_PRICES_ENDPOINT,
// GPUFLEET_GCP_BILLING_ENDPOINT and GPUFLEET_LAMBDA_ENDPOINT.
func EndpointsFromEnv() Endpoints {
	return Endpoints{
		AWSPricing:  os.Getenv("GPUFLEET_AWS_PRICING_ENDPOINT"),
		EC2:         os.Getenv("GPUFLEET_AWS_ENDPOINT"),
		AzurePrices: os.Getenv("GPUFLEET_AZURE_PRICES_ENDPOINT"),
		GCPBilling:  os.Getenv("GPUFLEET_GCP_BILLING_ENDPOINT"),
		Lambda:      os.Getenv("GPUFLEET_LAMBDA_ENDPOINT"),
	}
}

// EmulatorRetry is how a loader retries against the emulator, which
// answers at once: a test must not wait out backoffs meant for a cloud.
var EmulatorRetry = prices.Retry{MinWait: 10 * time.Millisecond, MaxWait: 100 * time.Millisecond}

// Loopback reports whether an endpoint is on this machine, which for a
// cloud's API means the emulator.
func Loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
