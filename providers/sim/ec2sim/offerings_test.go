package ec2sim_test

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	f := newFixture(t, sim.Config{})
	// Gone from one zone of us-east-1 and from every zone of eu-west-1.
	f.world.SetOffered(catalog.AWS, "us-east-1a", "p5.48xlarge", false)
	for _, z := range []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"} {
		f.world.SetOffered(catalog.AWS, z, "g4dn.xlarge", false)
	}
	typeFilter := func(values ...string) []ec2types.Filter {
		return []ec2types.Filter{{Name: aws.String("instance-type"), Values: values}}
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
			want:   []string{"us-east-1b p5.48xlarge", "us-east-1c p5.48xlarge", "us-east-1d p5.48xlarge", "us-east-1e p5.48xlarge", "us-east-1f p5.48xlarge"},
		},
		{
			name:   "one zone, types by wildcard",
			region: "us-east-1",
			in: &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{
				{Name: aws.String("location"), Values: []string{"us-east-1a"}},
				{Name: aws.String("instance-type"), Values: []string{"p5*"}},
			}},
			want: []string{"us-east-1a p5en.48xlarge"},
		},
		{
			name:   "a type sold on-demand only is offered",
			region: "us-east-1",
			in: &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: append(typeFilter("g6.12xlarge"),
				ec2types.Filter{Name: aws.String("location"), Values: []string{"us-east-1c"}})},
			want: []string{"us-east-1c g6.12xlarge"},
		},
		{
			name:   "a zone that sells a type on-demand only offers it",
			region: "eu-north-1",
			in:     &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: typeFilter("p5.48xlarge")},
			want:   []string{"eu-north-1a p5.48xlarge", "eu-north-1b p5.48xlarge", "eu-north-1c p5.48xlarge"},
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
			in:     &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeRegion, Filters: typeFilter("g4dn.xlarge", "g6.2xlarge")},
			want:   []string{"eu-west-1 g6.2xlarge"},
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
