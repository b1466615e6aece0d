// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// historyFixture is a front whose spot prices have a seeded past.
func historyFixture(t *testing.T, seed uint64) *fixture {
	t.Helper()
	clock := sim.NewManualClock(start)
	world, err := sim.New(sim.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{SpotHistory: &ec2sim.SpotHistory{Seed: seed}}))
	t.Cleanup(srv.Close)
	return &fixture{world: world, clock: clock, url: srv.URL}
}

// listAll pages a listing to its end.
func listAll(t *testing.T, c *ec2.Client, in *ec2.DescribeSpotPriceHistoryInput) ([]types.SpotPrice, int) {
	t.Helper()
	var out []types.SpotPrice
	pages := 0
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		out = append(out, page.SpotPriceHistory...)
	}
	return out, pages
}

func pointKey(p types.SpotPrice) string {
	return fmt.Sprintf("%s/%s@%s", aws.ToString(p.AvailabilityZone), p.InstanceType, aws.ToTime(p.Timestamp).Format(time.RFC3339))
}

func micros(t *testing.T, p types.SpotPrice) int64 {
	t.Helper()
	f, err := strconv.ParseFloat(aws.ToString(p.SpotPrice), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(f*1e6 + 0.5)
}

func TestSpotHistoryPagesEveryPointOnceNewestFirst(t *testing.T) {
	f := historyFixture(t, 1)
	fetched := f.world.Catalog().FetchedAt
	c := f.client("us-east-1", 1)
	in := func(max int32) *ec2.DescribeSpotPriceHistoryInput {
		return &ec2.DescribeSpotPriceHistoryInput{
			InstanceTypes: []types.InstanceType{"g4dn.xlarge", "p5.48xlarge"},
			StartTime:     aws.Time(fetched.Add(-72 * time.Hour)),
			MaxResults:    aws.Int32(max),
		}
	}
	whole, pages := listAll(t, c, in(1000))
	if pages != 1 {
		t.Fatalf("%d points took %d pages of 1000", len(whole), pages)
	}
	paged, pages := listAll(t, c, in(7))
	if want := (len(whole) + 6) / 7; pages != want {
		t.Errorf("%d points in %d pages of 7, want %d", len(paged), pages, want)
	}
	seen := map[string]bool{}
	for i, p := range paged {
		k := pointKey(p)
		if seen[k] {
			t.Fatalf("%s listed twice", k)
		}
		seen[k] = true
		if k != pointKey(whole[i]) || aws.ToString(p.SpotPrice) != aws.ToString(whole[i].SpotPrice) {
			t.Fatalf("point %d is %s paged, %s whole", i, k, pointKey(whole[i]))
		}
		if i > 0 && aws.ToTime(p.Timestamp).After(aws.ToTime(paged[i-1].Timestamp)) {
			t.Fatalf("point %d, %s, is newer than the one before it", i, k)
		}
	}

	// Per zone and type: a few changes a day within ±15 % of the catalog's
	// price, which holds from the catalog's date.
	rowPrice := map[string]int64{}
	for _, typ := range []string{"g4dn.xlarge", "p5.48xlarge"} {
		for _, z := range catalogZones(t, "us-east-1", typ, catalog.Spot) {
			rowPrice[z+"/"+typ], _ = catalogPrice("us-east-1", z, typ, catalog.Spot)
		}
	}
	series := map[string][]types.SpotPrice{}
	for _, p := range whole {
		k := aws.ToString(p.AvailabilityZone) + "/" + string(p.InstanceType)
		series[k] = append(series[k], p)
	}
	if len(series) != len(rowPrice) {
		t.Fatalf("%d series, want one for each of the catalog's %d zone rows", len(series), len(rowPrice))
	}
	for k, s := range series {
		latest := s[0]
		if !aws.ToTime(latest.Timestamp).Equal(fetched) || micros(t, latest) != rowPrice[k] {
			t.Errorf("%s: latest point %s at %v, want the catalog's price at %v", k, aws.ToString(latest.SpotPrice), latest.Timestamp, fetched)
		}
		if n := len(s); n < 3*3 || n > 3*4+2 {
			t.Errorf("%s: %d points over 3 days", k, n)
		}
		oldest := aws.ToTime(s[len(s)-1].Timestamp)
		if !oldest.Before(fetched.Add(-72*time.Hour)) || oldest.Before(fetched.Add(-78*time.Hour)) {
			t.Errorf("%s: oldest point at %v, want the one in force 72 hours before %v", k, oldest, fetched)
		}
		base := rowPrice[k]
		for _, p := range s {
			if m := micros(t, p); m <= 0 || m < base*85/100-100 || m > base*115/100+100 {
				t.Errorf("%s: %s is more than 15 %% from %d micros", pointKey(p), aws.ToString(p.SpotPrice), base)
			}
			if p.ProductDescription != "Linux/UNIX" {
				t.Errorf("%s: product %q", pointKey(p), p.ProductDescription)
			}
		}
	}
	g4dnZones := catalogZones(t, "us-east-1", "g4dn.xlarge", catalog.Spot)
	if len(g4dnZones) < 2 {
		t.Fatalf("us-east-1 sells g4dn.xlarge as spot in %v, want two zones", g4dnZones)
	}
	a, b := series[g4dnZones[0]+"/g4dn.xlarge"], series[g4dnZones[1]+"/g4dn.xlarge"]
	if aws.ToString(a[1].SpotPrice) == aws.ToString(b[1].SpotPrice) && aws.ToTime(a[1].Timestamp).Equal(aws.ToTime(b[1].Timestamp)) {
		t.Error("two zones share one past")
	}

	// The same seed serves the same past; another, another.
	again, _ := listAll(t, historyFixture(t, 1).client("us-east-1", 1), in(1000))
	other, _ := listAll(t, historyFixture(t, 2).client("us-east-1", 1), in(1000))
	if fmt.Sprint(keys(again)) != fmt.Sprint(keys(whole)) {
		t.Error("the same seed served another history")
	}
	if fmt.Sprint(keys(other)) == fmt.Sprint(keys(whole)) {
		t.Error("another seed served the same history")
	}

	// A page token is of one listing: the pages after it are as of when it
	// began, while the world's clock moves on.
	first, err := c.DescribeSpotPriceHistory(context.Background(), in(5))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(24 * time.Hour)
	next := in(5)
	next.NextToken = first.NextToken
	second, err := c.DescribeSpotPriceHistory(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(second.SpotPriceHistory); fmt.Sprint(got) != fmt.Sprint(keys(whole[5:10])) {
		t.Errorf("second page %v, want %v", got, keys(whole[5:10]))
	}
}

func keys(ps []types.SpotPrice) []string {
	var out []string
	for _, p := range ps {
		out = append(out, pointKey(p)+"="+aws.ToString(p.SpotPrice))
	}
	return out
}

// A start of now is the latest price per zone and type, with a past or
// without: what providers/aws and the price loader read.
func TestSpotHistoryStartingNowIsTheLatestPrice(t *testing.T) {
	in := &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(start)}
	plain, _ := listAll(t, newFixture(t, sim.Config{}).client("us-east-1", 1), in)
	with, _ := listAll(t, historyFixture(t, 1).client("us-east-1", 1), in)
	if want := catalogSpotQuotes("us-east-1"); len(plain) != want {
		t.Fatalf("%d latest prices, want one for each of the catalog's %d zone and type pairs", len(plain), want)
	}
	if fmt.Sprint(keys(with)) != fmt.Sprint(keys(plain)) {
		t.Errorf("with a past, the latest prices are\n%v\nwithout\n%v", keys(with), keys(plain))
	}
}

func TestSpotHistoryWindowsAndFilters(t *testing.T) {
	f := historyFixture(t, 3)
	fetched := f.world.Catalog().FetchedAt
	c := f.client("us-east-1", 1)
	day := func(n int) *time.Time { return aws.Time(fetched.Add(time.Duration(n) * 24 * time.Hour)) }
	g4dn := []types.InstanceType{"g4dn.xlarge"}
	zone := catalogZones(t, "us-east-1", "g4dn.xlarge", catalog.Spot)[0]
	price, _ := catalogPrice("us-east-1", zone, "g4dn.xlarge", catalog.Spot)
	all, _ := listAll(t, c, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, AvailabilityZone: aws.String(zone), StartTime: day(-10)})
	if len(all) < 30 {
		t.Fatalf("%d points in 10 days", len(all))
	}
	// The answer: all's points whose time is in (from, to], and the one
	// in force at from.
	window := func(from, to time.Time) []string {
		var out []types.SpotPrice
		for _, p := range all {
			at := aws.ToTime(p.Timestamp)
			if at.After(from) && !at.After(to) {
				out = append(out, p)
			}
		}
		for _, p := range all {
			if !aws.ToTime(p.Timestamp).After(from) {
				out = append(out, p)
				break
			}
		}
		return keys(out)
	}
	mid := aws.ToTime(all[len(all)/2].Timestamp)
	probe := all[7]

	tests := []struct {
		name string
		in   *ec2.DescribeSpotPriceHistoryInput
		want []string
	}{
		{
			name: "a window of two days",
			in:   &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, AvailabilityZone: aws.String(zone), StartTime: day(-5), EndTime: day(-3)},
			want: window(*day(-5), *day(-3)),
		},
		{
			name: "a window that starts at a change",
			in:   &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, AvailabilityZone: aws.String(zone), StartTime: aws.Time(mid), EndTime: day(-1)},
			want: window(mid, *day(-1)),
		},
		{
			name: "an end in the future is now",
			in:   &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, AvailabilityZone: aws.String(zone), StartTime: day(-10), EndTime: day(30)},
			want: keys(all),
		},
		{
			name: "a spot-price filter",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, StartTime: day(-10), Filters: []types.Filter{
				{Name: aws.String("spot-price"), Values: []string{aws.ToString(probe.SpotPrice)}},
				{Name: aws.String("availability-zone"), Values: []string{zone}},
			}},
			want: keysWhere(all, func(p types.SpotPrice) bool { return aws.ToString(p.SpotPrice) == aws.ToString(probe.SpotPrice) }),
		},
		{
			name: "a timestamp filter with a wildcard",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, StartTime: day(-10), Filters: []types.Filter{
				{Name: aws.String("timestamp"), Values: []string{aws.ToTime(probe.Timestamp).Format("2006-01-02T15") + "*"}},
				{Name: aws.String("availability-zone"), Values: []string{"us-east-1?"}},
				{Name: aws.String("instance-type"), Values: []string{"g4dn.*"}},
				{Name: aws.String("product-description"), Values: []string{"Linux/UNIX"}},
			}},
			want: func() []string {
				var out []types.SpotPrice
				all, _ := listAll(t, c, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, StartTime: day(-10)})
				for _, p := range all {
					if aws.ToTime(p.Timestamp).Truncate(time.Hour).Equal(aws.ToTime(probe.Timestamp).Truncate(time.Hour)) {
						out = append(out, p)
					}
				}
				return keys(out)
			}(),
		},
		{
			name: "a timestamp filter in the documentation's form",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, AvailabilityZone: aws.String(zone), StartTime: day(-10), Filters: []types.Filter{
				{Name: aws.String("timestamp"), Values: []string{aws.ToTime(probe.Timestamp).Format("Mon Jan 02 15:04:05 UTC 2006")}},
			}},
			want: keys([]types.SpotPrice{probe}),
		},
		{
			name: "no Windows past either",
			in:   &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, StartTime: day(-10), ProductDescriptions: []string{"Windows"}},
		},
		{
			name: "a product-description filter that matches nothing",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: g4dn, StartTime: day(-10), Filters: []types.Filter{
				{Name: aws.String("product-description"), Values: []string{"SUSE Linux"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := listAll(t, c, tt.in)
			if fmt.Sprint(keys(got)) != fmt.Sprint(tt.want) {
				t.Errorf("got\n%v\nwant\n%v", keys(got), tt.want)
			}
		})
	}
	if !slices.ContainsFunc(all, func(p types.SpotPrice) bool { return micros(t, p) != price }) {
		t.Error("the past never strays from the catalog's price")
	}
}

func keysWhere(ps []types.SpotPrice, keep func(types.SpotPrice) bool) []string {
	var out []types.SpotPrice
	for _, p := range ps {
		if keep(p) {
			out = append(out, p)
		}
	}
	return keys(out)
}
