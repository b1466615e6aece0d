// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestDescribeSpotPriceHistory(t *testing.T) {
	// us-east-1 sells g6.12xlarge on demand only, and prices p5.48xlarge
	// spot with one row for the whole region, which the embedded catalog,
	// with a row per zone, need not have.
	cat := withoutSpot(t, "us-east-1", "g6.12xlarge")
	regional := catalog.Offer{}
	cat.Offers = slices.DeleteFunc(cat.Offers, func(o catalog.Offer) bool {
		if o.Cloud == catalog.AWS && o.Region == "us-east-1" && o.InstanceType == "p5.48xlarge" && o.Market == catalog.Spot {
			regional = o
			return true
		}
		return false
	})
	regional.Zone, regional.PriceMicros = "", 31_000_000
	cat.Offers = append(cat.Offers, regional)
	f := newFixture(t, sim.Config{Catalog: cat})
	fetched := f.world.Catalog().FetchedAt
	linux := []string{"Linux/UNIX"}
	now := aws.Time(start)
	every := map[string]string{}
	east, _ := cat.Region(catalog.AWS, "us-east-1")
	for _, z := range east.Zones {
		every[z] = "31.000000"
	}
	// The catalog's rows of a type, by zone, as EC2 writes prices.
	rows := func(region, typ string) map[string]string {
		out := map[string]string{}
		for _, z := range catalogZones(t, region, typ, catalog.Spot) {
			p, _ := catalogPrice(region, z, typ, catalog.Spot)
			out[z] = fmt.Sprintf("%.6f", float64(p)/1e6)
		}
		return out
	}
	g4dnZones := catalogZones(t, "us-east-1", "g4dn.xlarge", catalog.Spot)
	if len(g4dnZones) < 2 {
		t.Fatalf("us-east-1 sells g4dn.xlarge as spot in %v, want two zones", g4dnZones)
	}
	one, other := g4dnZones[len(g4dnZones)-1], g4dnZones[len(g4dnZones)-2]

	tests := []struct {
		name   string
		region string
		in     *ec2.DescribeSpotPriceHistoryInput
		// want maps zone to price for the one type asked about.
		want map[string]string
	}{
		{
			name:   "a regional row prices every zone",
			region: "us-east-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"p5.48xlarge"}, ProductDescriptions: linux, StartTime: now},
			want:   every,
		},
		{
			name:   "a zone row prices only its zone",
			region: "eu-north-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"p5.48xlarge"}, ProductDescriptions: linux},
			want:   rows("eu-north-1", "p5.48xlarge"),
		},
		{
			name:   "one zone",
			region: "us-east-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"}, AvailabilityZone: aws.String(one)},
			want:   map[string]string{one: rows("us-east-1", "g4dn.xlarge")[one]},
		},
		{
			name:   "a zone filter",
			region: "us-east-1",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"}, Filters: []types.Filter{
				{Name: aws.String("availability-zone"), Values: []string{other}},
			}},
			want: map[string]string{other: rows("us-east-1", "g4dn.xlarge")[other]},
		},
		{
			name:   "no Windows prices",
			region: "us-east-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"}, ProductDescriptions: []string{"Windows"}},
			want:   map[string]string{},
		},
		{
			name:   "a window that ends before the price",
			region: "us-east-1",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"},
				StartTime: aws.Time(fetched.Add(-48 * time.Hour)), EndTime: aws.Time(fetched.Add(-24 * time.Hour))},
			want: map[string]string{},
		},
		{
			name:   "a type the region does not sell as spot",
			region: "us-east-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g6.12xlarge"}},
			want:   map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := f.client(tt.region, 1).DescribeSpotPriceHistory(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range out.SpotPriceHistory {
				if p.ProductDescription != types.RIProductDescription("Linux/UNIX") || p.Timestamp == nil || !p.Timestamp.Equal(fetched) {
					t.Errorf("price %+v: want Linux/UNIX at %v", p, fetched)
				}
				got[aws.ToString(p.AvailabilityZone)] = aws.ToString(p.SpotPrice)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeSpotPriceHistoryPaging(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	seen := map[string]bool{}
	pages := 0
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, price := range page.SpotPriceHistory {
			key := aws.ToString(price.AvailabilityZone) + "/" + string(price.InstanceType)
			if seen[key] {
				t.Fatalf("%s listed twice", key)
			}
			seen[key] = true
		}
	}
	// One latest price for each zone and type the catalog prices as spot.
	if want := catalogSpotQuotes("us-east-1"); len(seen) != want || pages != (want+6)/7 {
		t.Errorf("listed %d prices in %d pages, want %d in %d", len(seen), pages, want, (want+6)/7)
	}
}

func TestDescribeSpotPriceHistoryErrors(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	tests := []struct {
		name     string
		in       *ec2.DescribeSpotPriceHistoryInput
		wantCode string
		wantMsg  string
	}{
		{name: "another region's zone", in: &ec2.DescribeSpotPriceHistoryInput{AvailabilityZone: aws.String("us-west-2a")}, wantCode: "InvalidParameterValue", wantMsg: "Invalid availability zone: [us-west-2a]"},
		{name: "unknown filter", in: &ec2.DescribeSpotPriceHistoryInput{Filters: []types.Filter{{Name: aws.String("colour"), Values: []string{"x"}}}}, wantCode: "InvalidParameterValue", wantMsg: "The filter 'colour' is invalid"},
		{name: "end before start", in: &ec2.DescribeSpotPriceHistoryInput{StartTime: aws.Time(start), EndTime: aws.Time(start.Add(-time.Hour))}, wantCode: "InvalidParameterValue"},
		{name: "forged token", in: &ec2.DescribeSpotPriceHistoryInput{NextToken: aws.String("AAAA")}, wantCode: "InvalidPaginationToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.DescribeSpotPriceHistory(context.Background(), tt.in)
			msg := wantAPIError(t, err, tt.wantCode, 400)
			if tt.wantMsg != "" && msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
		})
	}
}
