// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	// us-east-1 sells g6.12xlarge on demand only.
	f := newFixture(t, sim.Config{Catalog: withoutSpot(t, "us-east-1", "g6.12xlarge")})
	both := []catalog.Market{catalog.OnDemand, catalog.Spot}
	// p5.48xlarge is gone from a zone of us-east-1 that sells another p5
	// type, and g4dn.xlarge from every zone of eu-west-1.
	p5Zone := ""
	for _, z := range catalogZones(t, "us-east-1", "p5.48xlarge", both...) {
		if slices.Contains(catalogZones(t, "us-east-1", "p5en.48xlarge", both...), z) {
			p5Zone = z
			break
		}
	}
	if p5Zone == "" {
		t.Fatal("no zone of us-east-1 sells both p5.48xlarge and p5en.48xlarge")
	}
	f.world.SetOffered(catalog.AWS, p5Zone, "p5.48xlarge", false)
	euWest, _ := f.world.Region(catalog.AWS, "eu-west-1")
	for _, z := range euWest.Zones {
		f.world.SetOffered(catalog.AWS, z, "g4dn.xlarge", false)
	}
	// Another type eu-west-1 sells, which stays offered.
	euWestOther := ""
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == "eu-west-1" && o.InstanceType != "g4dn.xlarge" {
			euWestOther = o.InstanceType
			break
		}
	}
	if euWestOther == "" {
		t.Fatal("eu-west-1 sells nothing but g4dn.xlarge")
	}
	typeFilter := func(values ...string) []ec2types.Filter {
		return []ec2types.Filter{{Name: aws.String("instance-type"), Values: values}}
	}
	located := func(typ string, zones ...string) []string {
		var out []string
		for _, z := range zones {
			out = append(out, z+" "+typ)
		}
		return out
	}
	var p5Others []string
	for _, typ := range catalogTypes("us-east-1", p5Zone) {
		if strings.HasPrefix(typ, "p5") && typ != "p5.48xlarge" {
			p5Others = append(p5Others, p5Zone+" "+typ)
		}
	}
	onDemandOnly := catalogZones(t, "us-east-1", "g6.12xlarge", catalog.OnDemand)[0]
	northP5 := catalogZones(t, "eu-north-1", "p5.48xlarge", both...)
	if !slices.ContainsFunc(northP5, func(z string) bool {
		_, spot := catalogPrice("eu-north-1", z, "p5.48xlarge", catalog.Spot)
		return !spot
	}) {
		t.Fatal("every zone of eu-north-1 that sells p5.48xlarge sells it as spot too")
	}

	tests := []struct {
		name   string
		region string
		in     *ec2.DescribeInstanceTypeOfferingsInput
		// want lists "location type" pairs, sorted.
		want []string
	}{
		{
			name:   "zones, one type",
			region: "us-east-1",
			in:     &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: typeFilter("p5.48xlarge")},
			want: located("p5.48xlarge", slices.DeleteFunc(catalogZones(t, "us-east-1", "p5.48xlarge", both...), func(z string) bool {
				return z == p5Zone
			})...),
		},
		{
			name:   "one zone, types by wildcard",
			region: "us-east-1",
			in: &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{
				{Name: aws.String("location"), Values: []string{p5Zone}},
				{Name: aws.String("instance-type"), Values: []string{"p5*"}},
			}},
			want: p5Others,
		},
		{
			name:   "a type sold on-demand only is offered",
			region: "us-east-1",
			in: &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: append(typeFilter("g6.12xlarge"),
				ec2types.Filter{Name: aws.String("location"), Values: []string{onDemandOnly}})},
			want: []string{onDemandOnly + " g6.12xlarge"},
		},
		{
			name:   "a zone that sells a type on-demand only offers it",
			region: "eu-north-1",
			in:     &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: typeFilter("p5.48xlarge")},
			want:   located("p5.48xlarge", northP5...),
		},
		{
			name:   "the region, while one of its zones offers it",
			region: "us-east-1",
			in:     &ec2.DescribeInstanceTypeOfferingsInput{Filters: typeFilter("p5.48xlarge")},
			want:   []string{"us-east-1 p5.48xlarge"},
		},
		{
			name:   "the region, once no zone offers it",
			region: "eu-west-1",
			in:     &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeRegion, Filters: typeFilter("g4dn.xlarge", euWestOther)},
			want:   []string{"eu-west-1 " + euWestOther},
		},
		{
			name:   "another region's zone",
			region: "us-east-1",
			in: &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{
				{Name: aws.String("location"), Values: []string{"us-west-2a"}},
			}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			p := ec2.NewDescribeInstanceTypeOfferingsPaginator(f.client(tt.region, 1), tt.in)
			for p.HasMorePages() {
				page, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page.InstanceTypeOfferings {
					if string(o.LocationType) != cmp.Or(string(tt.in.LocationType), "region") {
						t.Errorf("location type %q", o.LocationType)
					}
					got = append(got, aws.ToString(o.Location)+" "+string(o.InstanceType))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("offerings %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDescribeInstanceTypeOfferingsPaging(t *testing.T) {
	f := newFixture(t, sim.Config{})
	c := f.client("us-east-1", 1)
	all := offeringsOf(t, c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	tests := []struct {
		name      string
		pageSize  int32
		wantPages int
	}{
		{name: "pages of 5", pageSize: 5, wantPages: (len(all) + 4) / 5},
		{name: "pages of 1000", pageSize: 1000, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			pages := 0
			p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, &ec2.DescribeInstanceTypeOfferingsInput{
				LocationType: ec2types.LocationTypeAvailabilityZone,
				MaxResults:   aws.Int32(tt.pageSize),
			})
			for p.HasMorePages() {
				page, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, o := range page.InstanceTypeOfferings {
					got = append(got, aws.ToString(o.Location)+" "+string(o.InstanceType))
				}
			}
			if !slices.Equal(got, all) {
				t.Errorf("paged %d offerings, want the %d of one listing in the same order", len(got), len(all))
			}
			if pages != tt.wantPages {
				t.Errorf("%d pages, want %d", pages, tt.wantPages)
			}
		})
	}
}

func offeringsOf(t *testing.T, c *ec2.Client, in *ec2.DescribeInstanceTypeOfferingsInput) []string {
	t.Helper()
	out, err := c.DescribeInstanceTypeOfferings(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.NextToken != nil {
		t.Fatal("one listing without MaxResults came with a NextToken")
	}
	var got []string
	for _, o := range out.InstanceTypeOfferings {
		got = append(got, aws.ToString(o.Location)+" "+string(o.InstanceType))
	}
	return got
}

func TestDescribeInstanceTypeOfferingsFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      sim.Fault
		wantCode   string
		wantStatus int
		wantMsg    string
	}{
		{
			name:       "denied",
			fault:      sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Kind: sim.FaultServerError, Code: "UnauthorizedOperation", Times: 1},
			wantCode:   "UnauthorizedOperation",
			wantStatus: 403,
			wantMsg:    "You are not authorized to perform this operation.",
		},
		{
			name:       "throttled",
			fault:      sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Kind: sim.FaultThrottle, Times: 1},
			wantCode:   "RequestLimitExceeded",
			wantStatus: 503,
			wantMsg:    "Request limit exceeded.",
		},
		{
			name:       "aimed at one zone",
			fault:      sim.Fault{Cloud: "aws", Op: "DescribeInstanceTypeOfferings", Zone: "us-east-1c", Kind: sim.FaultServerError, Times: 1},
			wantCode:   "InternalError",
			wantStatus: 500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			if err := f.world.AddFaults(&tt.fault); err != nil {
				t.Fatal(err)
			}
			_, err := f.client("us-east-1", 1).DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
				LocationType: ec2types.LocationTypeAvailabilityZone,
				Filters:      []ec2types.Filter{{Name: aws.String("location"), Values: []string{"us-east-1c"}}},
			})
			msg := wantAPIError(t, err, tt.wantCode, tt.wantStatus)
			if tt.wantMsg != "" && msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
			if got := f.world.Calls()["aws DescribeInstanceTypeOfferings"]; got != 1 {
				t.Errorf("%d calls counted, want 1", got)
			}
		})
	}
}
