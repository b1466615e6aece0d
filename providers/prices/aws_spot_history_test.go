// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// runningClock is the world's time running on from a start with the
// wall clock, so that a throttled bucket refills while the retryer waits.
type runningClock struct {
	start time.Time
	wall  time.Time
}

func (c runningClock) Now() time.Time { return c.start.Add(time.Since(c.wall)).UTC() }

// spotHistoryWorld is an EC2 front whose spot prices have a seeded past,
// an hour after the catalog's prices took effect.
func spotHistoryWorld(t *testing.T) (*sim.World, string) {
	t.Helper()
	at := catalog.Default().FetchedAt.Add(time.Hour)
	world, err := sim.New(sim.Config{Seed: 5, Clock: runningClock{at, time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{SpotHistory: &ec2sim.SpotHistory{Seed: 5}}))
	t.Cleanup(srv.Close)
	return world, srv.URL
}

func newSpotHistory(t *testing.T, world *sim.World, endpoint string, regions ...string) *AWSSpotHistory {
	t.Helper()
	s, err := NewAWSSpotHistory(context.Background(), AWSOptions{
		Options: Options{
			Regions:    regions,
			HTTPClient: aws.LoopbackHTTPClient(),
			Retry:      Retry{MinWait: 5 * time.Millisecond, MaxWait: 50 * time.Millisecond},
			Now:        world.Now,
		},
		SpotEndpoint: endpoint,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expected is what the front lists for a region over the window, read
// with the SDK directly, as a history.
func expected(t *testing.T, h *history.History, endpoint, region string, from, to time.Time) {
	t.Helper()
	c := ec2.New(ec2.Options{Region: region, BaseEndpoint: awssdk.String(endpoint), Credentials: credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""), HTTPClient: aws.LoopbackHTTPClient()})
	var points []history.Point
	var offers []string
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{StartTime: awssdk.Time(from), EndTime: awssdk.Time(to)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.SpotPriceHistory {
			at := awssdk.ToTime(p.Timestamp)
			if at.Before(from) {
				continue
			}
			micros, _ := ParseMicros(awssdk.ToString(p.SpotPrice))
			offers = append(offers, strings.Join([]string{"aws", region, awssdk.ToString(p.AvailabilityZone), string(p.InstanceType), "spot"}, "/"))
			points = append(points, history.Point{At: at, PriceMicros: micros})
		}
	}
	// Oldest first, as the import adds them.
	for i := len(points) - 1; i >= 0; i-- {
		h.Add(offers[i], points[i].At, points[i].PriceMicros)
	}
}

func written(t *testing.T, h *history.History) string {
	t.Helper()
	var buf bytes.Buffer
	if err := h.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestAWSSpotHistoryImportsEveryZonesPast(t *testing.T) {
	world, endpoint := spotHistoryWorld(t)
	s := newSpotHistory(t, world, endpoint, "us-east-1", "eu-north-1")
	h := &history.History{}
	added, err := s.Import(context.Background(), h, 3)
	if err != nil {
		t.Fatal(err)
	}
	to := world.Now()
	from := to.Add(-72 * time.Hour)
	t.Logf("added %v", added)
	if added["us-east-1"] < 60*9 || added["eu-north-1"] == 0 || len(added) != 2 {
		t.Fatalf("added %v", added)
	}
	want := &history.History{}
	// The window the import read ends at its start; the clock ran on a
	// little since.
	expected(t, want, endpoint, "us-east-1", from.Add(-time.Second), to)
	expected(t, want, endpoint, "eu-north-1", from.Add(-time.Second), to)
	if got, exp := written(t, h), written(t, want); got != exp {
		t.Fatalf("imported\n%s\nthe front lists\n%s", got, exp)
	}
	first, last := h.Span()
	if first.Before(from.Add(-time.Minute)) || first.After(from.Add(6*time.Hour)) || !last.Equal(catalog.Default().FetchedAt) {
		t.Errorf("history spans %v to %v, want 3 days to %v", first, last, catalog.Default().FetchedAt)
	}
	for _, series := range h.Series {
		parts := strings.Split(series.Offer, "/")
		if len(parts) != 5 || parts[2] == "" || parts[4] != "spot" {
			t.Errorf("offer %q is not a zone's spot offer", series.Offer)
		}
	}
	// The latest point of a zone is the catalog's price there: g4dn.xlarge
	// in the first zone the catalog sells it spot in.
	var sold catalog.Offer
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == "us-east-1" && o.Zone != "" && o.InstanceType == "g4dn.xlarge" && o.Market == catalog.Spot && o.PriceMicros > 0 {
			sold = o
			break
		}
	}
	if sold.Zone == "" {
		t.Fatal("the catalog sells no g4dn.xlarge spot in a us-east-1 zone")
	}
	if p, ok := h.PriceAt(history.Key(sold), to); !ok || p != sold.PriceMicros {
		t.Errorf("latest g4dn.xlarge price in %s %d, want the catalog's %d", sold.Zone, p, sold.PriceMicros)
	}

	// Again: every point is there already.
	again, err := s.Import(context.Background(), h, 3)
	if err != nil {
		t.Fatal(err)
	}
	if again["us-east-1"] != 0 || again["eu-north-1"] != 0 {
		t.Errorf("a second import added %v", again)
	}
}

// Throttled by a small bucket and by injected throttling, the import
// waits as the SDK's retryer says and gets the same history.
func TestAWSSpotHistoryRidesOutThrottling(t *testing.T) {
	world, endpoint := spotHistoryWorld(t)
	plain := &history.History{}
	if _, err := newSpotHistory(t, world, endpoint, "us-east-1").Import(context.Background(), plain, 10); err != nil {
		t.Fatal(err)
	}
	if err := world.SetRateLimits(sim.RateLimit{Cloud: catalog.AWS, Class: sim.ClassNonMutating, Rate: 50, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if err := world.AddFaults(&sim.Fault{Cloud: catalog.AWS, Op: "DescribeSpotPriceHistory", Kind: sim.FaultThrottle, Times: 2}); err != nil {
		t.Fatal(err)
	}
	throttled := &history.History{}
	added, err := newSpotHistory(t, world, endpoint, "us-east-1").Import(context.Background(), throttled, 10)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range world.Throttled() {
		n += v
	}
	t.Logf("%d throttled calls, %d calls in all, %v added", n, world.Calls()["aws DescribeSpotPriceHistory"], added)
	if n == 0 {
		t.Error("the bucket never throttled: the test proves nothing")
	}
	if added["us-east-1"] == 0 || written(t, throttled) != written(t, plain) {
		t.Errorf("throttled, the import read another history (%v added)", added)
	}
	if calls := world.Calls()["aws DescribeSpotPriceHistory"]; calls < 4 {
		t.Errorf("%d calls: ten days in pages of 1000 should take several", calls)
	}
}

func TestAWSSpotHistoryRefusesDaysEC2DoesNotKeep(t *testing.T) {
	world, endpoint := spotHistoryWorld(t)
	s := newSpotHistory(t, world, endpoint, "us-east-1")
	for _, days := range []int{0, -1, 91} {
		if _, err := s.Import(context.Background(), &history.History{}, days); err == nil || !strings.Contains(err.Error(), "not within 1 to 90") {
			t.Errorf("%d days: %v", days, err)
		}
	}
}

func TestParseMicros(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"30.330000", 30_330_000, true},
		{"0.201000", 201_000, true},
		// 0.1 + 0.2 is no float here.
		{"0.300000", 300_000, true},
		{"0.000001", 1, true},
		{"1.1", 1_100_000, true},
		{"12", 12_000_000, true},
		{".5", 500_000, true},
		{"0.0000005", 1, true},
		{"0.0000004", 0, true},
		{"2.6789994999", 2_678_999, true},
		{"9.9999995", 10_000_000, true},
		{"", 0, false},
		{".", 0, false},
		{"-1.0", 0, false},
		{"1e3", 0, false},
		{"1.2.3", 0, false},
		{"NaN", 0, false},
		{"1,000.00", 0, false},
		{"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseMicros(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseMicros(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
