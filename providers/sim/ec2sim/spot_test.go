package ec2sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
)

func TestDescribeSpotPriceHistory(t *testing.T) {
	f := newFixture(t, sim.Config{})
	fetched := f.world.Catalog().FetchedAt
	linux := []string{"Linux/UNIX"}
	now := aws.Time(start)

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
			want: map[string]string{
				"us-east-1a": "30.330000", "us-east-1b": "30.330000", "us-east-1c": "30.330000",
				"us-east-1d": "30.330000", "us-east-1e": "30.330000", "us-east-1f": "30.330000",
			},
		},
		{
			name:   "a zone row prices only its zone",
			region: "eu-north-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"p5.48xlarge"}, ProductDescriptions: linux},
			want:   map[string]string{"eu-north-1b": "28.530000"},
		},
		{
			name:   "one zone",
			region: "us-east-1",
			in:     &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"}, AvailabilityZone: aws.String("us-east-1c")},
			want:   map[string]string{"us-east-1c": "0.201000"},
		},
		{
			name:   "a zone filter",
			region: "us-east-1",
			in: &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []types.InstanceType{"g4dn.xlarge"}, Filters: []types.Filter{
				{Name: aws.String("availability-zone"), Values: []string{"us-east-1d"}},
			}},
			want: map[string]string{"us-east-1d": "0.201000"},
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
	// us-east-1 sells 10 types as spot, in each of its 6 zones.
	if len(seen) != 60 || pages != 9 {
		t.Errorf("listed %d prices in %d pages, want 60 in 9", len(seen), pages)
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
