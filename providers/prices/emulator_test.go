// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/emulator"
	"github.com/gpufleet/gpufleet/providers/sim/pricesim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

const emulatorKey = "emulator-key"

// startEmulator runs the emulator over a fresh world with small pages, so
// every listing takes several.
func startEmulator(t *testing.T, faults ...*sim.Fault) *emulator.Emulator {
	t.Helper()
	world, err := sim.New(sim.Config{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := world.AddFaults(faults...); err != nil {
		t.Fatal(err)
	}
	emu, err := emulator.Start(world, emulator.Options{Prices: pricesim.Options{PageSize: 7, APIKey: emulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close(context.Background()) })
	return emu
}

// loaders returns the four loaders pointed at the emulator, each reading
// the regions given for its cloud, or all.
func loaders(t *testing.T, emu *emulator.Emulator, opts Options, regions map[string][]string) []Loader {
	t.Helper()
	// The SDK races its own request bodies against a server this quick;
	// ec2sim's client sidesteps it (see aws.LoopbackHTTPClient).
	opts.HTTPClient = aws.LoopbackHTTPClient()
	with := func(cloud, endpoint string) Options {
		o := opts
		o.Endpoint, o.Regions = endpoint, regions[cloud]
		return o
	}
	aws, err := NewAWS(context.Background(), AWSOptions{
		Options:      with(catalog.AWS, emu.Endpoints.AWSPricing),
		SpotEndpoint: emu.Endpoints.EC2,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	azure, err := NewAzure(with(catalog.Azure, emu.Endpoints.AzurePrices))
	if err != nil {
		t.Fatal(err)
	}
	gcp, err := NewGCP(GCPOptions{Options: with(catalog.GCP, emu.Endpoints.GCPBilling), APIKey: emulatorKey})
	if err != nil {
		t.Fatal(err)
	}
	lambda, err := NewLambda(LambdaOptions{Options: with(catalog.Lambda, emu.Endpoints.Lambda), APIKey: emulatorKey})
	if err != nil {
		t.Fatal(err)
	}
	return []Loader{aws, azure, gcp, lambda}
}

// The emulator's price APIs, read by the loaders, give back the world's
// catalog at the granularity each API has (asTheAPIsPrice): AWS on-demand
// and GCP per region, AWS spot per zone, Azure per region. Exactly for AWS
// and Azure, whose APIs price whole instances; within a hundredth of a
// percent for GCP, whose machine prices the emulator has to split into
// parts.
func TestLoadersReadTheEmulatorsCatalog(t *testing.T) {
	emu := startEmulator(t)
	want := emu.World.Catalog()
	for _, l := range loaders(t, emu, Options{Retry: Retry{Max: -1}}, nil) {
		t.Run(l.Cloud(), func(t *testing.T) {
			got, err := l.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			expected := asTheAPIsPrice(t, want, l.Cloud())
			if l.Cloud() != catalog.GCP {
				diffOffers(t, got.Offers, expected)
			} else {
				if len(got.Offers) != len(expected) {
					diffStrings(t, "offers", placed(got.Offers), placed(expected))
					t.FailNow()
				}
				for i, o := range got.Offers {
					w := expected[i]
					price := o.PriceMicros
					o.PriceMicros, o.Source, o.Derived = w.PriceMicros, w.Source, w.Derived
					switch {
					case o != w:
						t.Errorf("offer %+v, want %+v", o, w)
					case w.PriceMicros == 0:
						if price <= 0 {
							t.Errorf("offer %+v at %d, want a price from its parts", o, price)
						}
					case math.Abs(float64(price-w.PriceMicros)) > 1e-4*float64(w.PriceMicros):
						t.Errorf("offer %+v at %d, want %d", o, price, w.PriceMicros)
					}
				}
			}
			if len(got.Regions) != len(want.RegionsOf(l.Cloud())) {
				t.Errorf("%d regions, want %d", len(got.Regions), len(want.RegionsOf(l.Cloud())))
			}
		})
	}
	calls := emu.World.Calls()
	for _, op := range []string{"aws GetProducts", "aws DescribeSpotPriceHistory", "azure RetailPrices", "gcp ListSkus"} {
		if calls[op] < 2 {
			t.Errorf("%s called %d times; the pages are too big to test paging", op, calls[op])
		}
	}
}

// 429s and 5xxs are retried, with backoff, and the load succeeds; each
// fault costs exactly one more call. -short skips it; TestRetriesAreBounded
// still retries.
func TestThrottlingAndServerErrorsAreRetriedWithBackoff(t *testing.T) {
	clean := startEmulator(t)
	opts := Options{Retry: Retry{Max: 4, MinWait: 20 * time.Millisecond, MaxWait: 80 * time.Millisecond}}
	// One region a cloud: the retries are of a load's first requests, and
	// the whole of AWS's price list is seconds of paging a load.
	regions := map[string][]string{catalog.AWS: {"us-east-1"}, catalog.Azure: {"eastus"}, catalog.GCP: {"us-central1"}}
	for _, l := range loaders(t, clean, opts, regions) {
		if _, err := l.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	baseline := clean.World.Calls()

	type test struct {
		op     string // "cloud Op", as the world counts calls
		faults []*sim.Fault
	}
	var tests []test
	for _, op := range []string{"aws GetProducts", "aws DescribeSpotPriceHistory", "azure RetailPrices", "gcp ListSkus"} {
		cloud, name, _ := strings.Cut(op, " ")
		tests = append(tests,
			test{op, []*sim.Fault{{Cloud: cloud, Op: name, Kind: sim.FaultThrottle, Times: 3}}},
			test{op, []*sim.Fault{{Cloud: cloud, Op: name, Kind: sim.FaultServerError, Times: 3}}},
		)
	}
	// 503 as well as 500.
	tests = append(tests, test{"azure RetailPrices", []*sim.Fault{{Cloud: "azure", Op: "RetailPrices", Kind: sim.FaultServerError, Code: "ServiceUnavailable", Times: 3}}})
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.faults[0].Kind+" "+tt.faults[0].Code, func(t *testing.T) {
			t.Parallel()
			emu := startEmulator(t, tt.faults...)
			cloud, _, _ := strings.Cut(tt.op, " ")
			for _, l := range loaders(t, emu, opts, regions) {
				if l.Cloud() != cloud {
					continue
				}
				started := time.Now()
				if _, err := l.Load(context.Background()); err != nil {
					t.Fatalf("load with 3 faults and 4 retries: %v", err)
				}
				// Three retries of one request back off 20, 40 and 80 ms
				// at least (jitter aside, the SDK's are the same).
				if took := time.Since(started); took < 100*time.Millisecond {
					t.Errorf("took %s: the retries did not back off", took)
				}
			}
			if got, want := emu.World.Calls()[tt.op], baseline[tt.op]+3; got != want {
				t.Errorf("%d calls, want %d (%d without faults, plus one per fault)", got, want, baseline[tt.op])
			}
		})
	}
}

// Retries are bounded: a price API that keeps failing fails the load
// after Max+1 attempts.
func TestRetriesAreBounded(t *testing.T) {
	tests := []struct {
		op    string
		fault sim.Fault
	}{
		{"aws GetProducts", sim.Fault{Cloud: "aws", Op: "GetProducts", Kind: sim.FaultThrottle, Times: 100}},
		{"azure RetailPrices", sim.Fault{Cloud: "azure", Op: "RetailPrices", Kind: sim.FaultServerError, Times: 100}},
		{"gcp ListSkus", sim.Fault{Cloud: "gcp", Op: "ListSkus", Kind: sim.FaultThrottle, Times: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			emu := startEmulator(t, &tt.fault)
			cloud, _, _ := strings.Cut(tt.op, " ")
			opts := Options{Retry: Retry{Max: 2, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond}}
			regions := map[string][]string{"aws": {"us-east-1"}, "azure": {"eastus"}, "gcp": {"us-central1"}}
			for _, l := range loaders(t, emu, opts, regions) {
				if l.Cloud() != cloud {
					continue
				}
				if _, err := l.Load(context.Background()); err == nil {
					t.Fatal("the load succeeded against an API that always fails")
				}
			}
			if got := emu.World.Calls()[tt.op]; got != 3 {
				t.Errorf("%d calls, want 3: one and two retries", got)
			}
		})
	}
}

// A 429's Retry-After is honoured over a shorter backoff, up to MaxWait.
func TestRetryAfterIsHonoured(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"2"}}}
	if got := backoff(time.Millisecond, 5*time.Second, 0, resp); got != 2*time.Second {
		t.Errorf("backoff %s, want the server's 2s", got)
	}
	if got := backoff(time.Millisecond, time.Second, 0, resp); got != time.Second {
		t.Errorf("backoff %s, want MaxWait 1s", got)
	}
	if got := backoff(10*time.Millisecond, time.Second, 2, &http.Response{StatusCode: 500, Header: http.Header{}}); got != 40*time.Millisecond {
		t.Errorf("backoff %s, want 10ms × 2² = 40ms", got)
	}

	// Over the wire: the emulator asks for one second; the first backoff
	// would be a millisecond.
	emu := startEmulator(t, &sim.Fault{Cloud: "azure", Op: "RetailPrices", Kind: sim.FaultThrottle, Times: 1})
	azure, err := NewAzure(Options{Regions: []string{"westus"}, Endpoint: emu.Endpoints.AzurePrices, Retry: Retry{MinWait: time.Millisecond, MaxWait: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if _, err := azure.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took < time.Second {
		t.Errorf("took %s: Retry-After: 1 was not honoured", took)
	}
}

// The GCP API key travels in the query string; it must not reach an error
// or a log line.
func TestGCPKeyIsNeverLogged(t *testing.T) {
	emu := startEmulator(t, &sim.Fault{Cloud: "gcp", Op: "ListSkus", Kind: sim.FaultServerError, Times: 100})
	var logs bytes.Buffer
	gcp, err := NewGCP(GCPOptions{
		Options: Options{
			Endpoint: emu.Endpoints.GCPBilling,
			Retry:    Retry{Max: 2, MinWait: time.Millisecond, MaxWait: time.Millisecond},
			Log:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
		APIKey: emulatorKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gcp.Load(context.Background())
	if err == nil {
		t.Fatal("the load succeeded")
	}
	if strings.Contains(err.Error(), emulatorKey) || strings.Contains(logs.String(), emulatorKey) {
		t.Errorf("the key leaked:\nerror: %v\nlogs: %s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "retrying a price request") {
		t.Errorf("retries were not logged: %s", logs.String())
	}

	// A wrong key is refused with the API's message, and not repeated.
	bad, err := NewGCP(GCPOptions{Options: Options{Endpoint: emu.Endpoints.GCPBilling}, APIKey: "wrong-key-123"})
	if err != nil {
		t.Fatal(err)
	}
	emu.World.ClearFaults()
	_, err = bad.Load(context.Background())
	if err == nil || !strings.Contains(err.Error(), "API key not valid") || strings.Contains(err.Error(), "wrong-key-123") {
		t.Errorf("error %v", err)
	}
	var attempts *attemptsError
	if errors.As(err, &attempts) {
		t.Errorf("a 400 was retried: %v", err)
	}
}
