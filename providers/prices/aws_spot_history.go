// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sync/errgroup"

	"github.com/gpufleet/gpufleet/schema/catalog"
	"github.com/gpufleet/gpufleet/schema/catalog/history"
)

// MaxSpotHistoryDays is how far back EC2 keeps spot prices.
const MaxSpotHistoryDays = 90

// spotHistoryPage is the largest page DescribeSpotPriceHistory returns:
// 90 days of a region's GPU types take a few dozen of them.
const spotHistoryPage = 1000

// spotHistoryRetries is the default retry budget of an import: it makes
// far more calls than a refresh, each a token of EC2's non-mutating
// bucket, and a throttled page is better waited for than the import lost.
const spotHistoryRetries = 9

// AWSSpotHistory reads past AWS spot prices from EC2's spot price history
// into a price history, zone by zone, for the spot offers of the
// configured regions. AWSOptions.SpotEndpoint points it at an emulator;
// Options.Endpoint, the Price List's, is not used.
type AWSSpotHistory struct {
	b       *base
	clients map[string]*ec2.Client // by region
}

// NewAWSSpotHistory builds the importer. Options.Retry.Max defaults to 9
// retries here: the SDK's standard retryer retries RequestLimitExceeded
// and 5xx answers with backoff up to Retry.MaxWait.
func NewAWSSpotHistory(ctx context.Context, opts AWSOptions) (*AWSSpotHistory, error) {
	if opts.Retry.Max == 0 {
		opts.Retry.Max = spotHistoryRetries
	}
	b, err := newBase(catalog.AWS, opts.Options)
	if err != nil {
		return nil, err
	}
	cfg, err := awsConfig(ctx, b, opts)
	if err != nil {
		return nil, fmt.Errorf("aws spot history, %w", err)
	}
	return &AWSSpotHistory{b: b, clients: ec2Clients(cfg, b, opts)}, nil
}

// Regions are the regions Import reads, sorted.
func (s *AWSSpotHistory) Regions() []string {
	var out []string
	for _, r := range s.b.regions {
		out = append(out, r.Name)
	}
	return out
}

// spotHistoryPoint is one price EC2 reported.
type spotHistoryPoint struct {
	offer  string
	at     time.Time
	micros int64
}

// Import adds to h the spot prices of the last days (1 to 90) up to now,
// each under its zone's offer key (cloud/region/zone/type/spot: EC2 prices
// spot per zone), and returns how many points it added per region. A
// point h already has adds nothing, so importing twice is harmless. The
// price EC2 reports as in force at the window's start, timestamped before
// it, is left out: the window is what was asked for. Every region is read
// before h changes, so a failed import leaves h as it was.
func (s *AWSSpotHistory) Import(ctx context.Context, h *history.History, days int) (map[string]int, error) {
	if days < 1 || days > MaxSpotHistoryDays {
		return nil, fmt.Errorf("aws spot history: %d days is not within 1 to %d, the days EC2 keeps", days, MaxSpotHistoryDays)
	}
	to := s.b.now().UTC()
	from := to.Add(-time.Duration(days) * 24 * time.Hour)
	found := make([][]spotHistoryPoint, len(s.b.regions))
	g, gctx := errgroup.WithContext(ctx)
	// A few regions at once: each has its own bucket at EC2.
	g.SetLimit(4)
	for i, region := range s.b.regions {
		g.Go(func() (err error) {
			found[i], err = s.region(gctx, region, from, to)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	added := map[string]int{}
	for i, region := range s.b.regions {
		added[region.Name] = 0
		// Oldest first, so that each point lands at the end of its series.
		slices.SortStableFunc(found[i], func(a, b spotHistoryPoint) int { return a.at.Compare(b.at) })
		for _, p := range found[i] {
			if h.Add(p.offer, p.at, p.micros) {
				added[region.Name]++
			}
		}
	}
	return added, nil
}

// region pages one region's history of its spot types over [from, to].
func (s *AWSSpotHistory) region(ctx context.Context, region catalog.Region, from, to time.Time) ([]spotHistoryPoint, error) {
	var types []string
	for _, o := range s.b.known.Offers {
		if o.Cloud == catalog.AWS && o.Region == region.Name && o.Market == catalog.Spot && !slices.Contains(types, o.InstanceType) {
			types = append(types, o.InstanceType)
		}
	}
	if len(types) == 0 {
		return nil, nil
	}
	slices.Sort(types)
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{linuxSpot},
		StartTime:           awssdk.Time(from),
		EndTime:             awssdk.Time(to),
		MaxResults:          awssdk.Int32(spotHistoryPage),
	}
	for _, t := range types {
		in.InstanceTypes = append(in.InstanceTypes, ec2types.InstanceType(t))
	}
	var out []spotHistoryPoint
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(s.clients[region.Name], in)
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return nil, fmt.Errorf("aws spot history in %s, more than %d pages", region.Name, maxPages)
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing AWS spot price history in %s, %w", region.Name, err)
		}
		for _, p := range page.SpotPriceHistory {
			zone, instanceType := awssdk.ToString(p.AvailabilityZone), string(p.InstanceType)
			at := awssdk.ToTime(p.Timestamp).UTC()
			if p.ProductDescription != linuxSpot || !slices.Contains(types, instanceType) || at.Before(from) || at.After(to) {
				continue
			}
			drop := Drop{Region: region.Name, Zone: zone, InstanceType: instanceType, Market: catalog.Spot, Row: "spot price of " + at.Format(time.RFC3339)}
			if !slices.Contains(region.Zones, zone) {
				drop.Reason = ReasonUnknownZone
				s.b.drop(drop)
				continue
			}
			usd := awssdk.ToString(p.SpotPrice)
			micros, ok := ParseMicros(usd)
			if !ok || micros <= 0 {
				drop.Reason, drop.Detail = ReasonPlaceholder, fmt.Sprintf("%q", usd)
				s.b.drop(drop)
				continue
			}
			offer := history.Key(catalog.Offer{Cloud: catalog.AWS, Region: region.Name, Zone: zone, InstanceType: instanceType, Market: catalog.Spot})
			out = append(out, spotHistoryPoint{offer, at, micros})
		}
	}
	return out, nil
}

// ParseMicros reads a decimal dollar amount, as EC2 writes prices
// ("30.330000"), into micro-dollars exactly: the digits are read as
// digits, never through a float. Digits past the sixth decimal round half
// up. It refuses signs, exponents and anything but digits and one point.
func ParseMicros(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	if whole == "" && frac == "" {
		return 0, false
	}
	const maxWhole = 1_000_000_000 // a billion dollars an hour: no price
	var micros int64
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		micros = micros*10 + int64(c-'0')
		if micros > maxWhole {
			return 0, false
		}
	}
	for i := range 6 {
		micros *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			micros += int64(c - '0')
		}
	}
	if len(frac) > 6 {
		for _, c := range frac[6:] {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		if frac[6] >= '5' {
			micros++
		}
	}
	return micros, true
}
