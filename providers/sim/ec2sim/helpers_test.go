// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/smithy-go"

	gfaws "github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/providers/sim/ec2sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// start is a day after the embedded catalog's FetchedAt, so spot prices
// carry the catalog's date.
var start = catalog.Default().FetchedAt.Add(24 * time.Hour)

type fixture struct {
	world *sim.World
	clock *sim.ManualClock
	url   string
}

// zoneSelling is the first zone of region, other than those in not,
// whose catalog sells typ on market.
func zoneSelling(t testing.TB, w *sim.World, region, typ string, market catalog.Market, not ...string) string {
	t.Helper()
	r, ok := w.Region(catalog.AWS, region)
	if !ok {
		t.Fatalf("no region %s", region)
	}
	for _, z := range r.Zones {
		if _, ok := w.Type(catalog.AWS, z, typ, market); ok && !slices.Contains(not, z) {
			return z
		}
	}
	t.Fatalf("no zone of %s but %v sells %s %s", region, not, typ, market)
	return ""
}

// withoutSpot is the embedded catalog without typ's spot offers in
// region: a type the region sells on demand only, which the embedded
// catalog need not have.
func withoutSpot(t testing.TB, region, typ string) *catalog.Catalog {
	t.Helper()
	cat := *catalog.Default()
	cat.Offers = slices.DeleteFunc(slices.Clone(cat.Offers), func(o catalog.Offer) bool {
		return o.Cloud == catalog.AWS && o.Region == region && o.InstanceType == typ && o.Market == catalog.Spot
	})
	if len(cat.Offers) == len(catalog.Default().Offers) {
		t.Fatalf("the catalog sells no %s as spot in %s", typ, region)
	}
	return &cat
}

// catalogZones lists the zones of region, in the region's order, where
// the embedded catalog has a row of typ on one of markets.
func catalogZones(t testing.TB, region, typ string, markets ...catalog.Market) []string {
	t.Helper()
	r, ok := catalog.Default().Region(catalog.AWS, region)
	if !ok {
		t.Fatalf("the catalog has no region %s", region)
	}
	var out []string
	for _, z := range r.Zones {
		if slices.ContainsFunc(markets, func(m catalog.Market) bool { _, ok := catalogPrice(region, z, typ, m); return ok }) {
			out = append(out, z)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the catalog sells no %s %v in %s", typ, markets, region)
	}
	return out
}

// catalogPrice is the embedded catalog's price of typ on market in
// a zone, from the zone's own row.
func catalogPrice(region, zone, typ string, market catalog.Market) (int64, bool) {
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == region && o.Zone == zone && o.InstanceType == typ && o.Market == market {
			return o.PriceMicros, true
		}
	}
	return 0, false
}

// catalogTypes lists, sorted, the types the embedded catalog has a row
// of in a zone of region, on any market.
func catalogTypes(region, zone string) []string {
	var out []string
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == region && o.Zone == zone && !slices.Contains(out, o.InstanceType) {
			out = append(out, o.InstanceType)
		}
	}
	slices.Sort(out)
	return out
}

// catalogSpotQuotes counts the zone and type pairs of region the
// embedded catalog prices as spot: what DescribeSpotPriceHistory lists
// once for each as its latest price.
func catalogSpotQuotes(region string) int {
	seen := map[[2]string]bool{}
	for _, o := range catalog.Default().Offers {
		if o.Cloud == catalog.AWS && o.Region == region && o.Zone != "" && o.Market == catalog.Spot && o.PriceMicros > 0 {
			seen[[2]string{o.Zone, o.InstanceType}] = true
		}
	}
	return len(seen)
}

func newFixture(t testing.TB, cfg sim.Config) *fixture {
	t.Helper()
	clock := sim.NewManualClock(start)
	cfg.Clock = clock
	world, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ec2sim.New(world, ec2sim.Options{}))
	t.Cleanup(srv.Close)
	return &fixture{world: world, clock: clock, url: srv.URL}
}

// client is the official SDK client pointed at the front. attempts is the
// standard retryer's budget; 1 turns retries off. Backoff is cut to a
// millisecond and the retry token bucket disabled, so retried faults cost
// the tests no real time. The HTTP client is the front's own, which keeps
// the SDK's request-body race (see gfaws.LoopbackHTTPClient) out of the counts.
func (f *fixture) client(region string, attempts int) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       region,
		BaseEndpoint: aws.String(f.url),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		Retryer:      retryer(attempts),
		HTTPClient:   gfaws.LoopbackHTTPClient(),
	})
}

// quotas is the official Service Quotas client pointed at the same front,
// as the one GPUFLEET_AWS_ENDPOINT points both clients.
func (f *fixture) quotas(region string, attempts int) *servicequotas.Client {
	return servicequotas.New(servicequotas.Options{
		Region:       region,
		BaseEndpoint: aws.String(f.url),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIM", "secret", ""),
		Retryer:      retryer(attempts),
		HTTPClient:   gfaws.LoopbackHTTPClient(),
	})
}

// retryer is the standard retryer with attempts in all, backoff cut to a
// millisecond and no retry token bucket; 1 turns retries off.
func retryer(attempts int) aws.Retryer {
	if attempts <= 1 {
		return aws.NopRetryer{}
	}
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = attempts
		o.MaxBackoff = time.Millisecond
		o.RateLimiter = ratelimit.None
	})
}

// runInput is a minimal valid launch, which cases then adjust.
func runInput(instanceType, zone, token string) *ec2.RunInstancesInput {
	in := &ec2.RunInstancesInput{
		ImageId:      aws.String("ami-0123456789abcdef0"),
		InstanceType: types.InstanceType(instanceType),
		MinCount:     aws.Int32(1),
		MaxCount:     aws.Int32(1),
	}
	if zone != "" {
		in.Placement = &types.Placement{AvailabilityZone: aws.String(zone)}
	}
	if token != "" {
		in.ClientToken = aws.String(token)
	}
	return in
}

func withTags(in *ec2.RunInstancesInput, kv ...string) *ec2.RunInstancesInput {
	spec := types.TagSpecification{ResourceType: types.ResourceTypeInstance}
	for i := 0; i+1 < len(kv); i += 2 {
		spec.Tags = append(spec.Tags, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	in.TagSpecifications = append(in.TagSpecifications, spec)
	return in
}

func spot(in *ec2.RunInstancesInput) *ec2.RunInstancesInput {
	in.InstanceMarketOptions = &types.InstanceMarketOptionsRequest{
		MarketType:  types.MarketTypeSpot,
		SpotOptions: &types.SpotMarketOptions{SpotInstanceType: types.SpotInstanceTypeOneTime, InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate},
	}
	return in
}

func mustRun(t *testing.T, c *ec2.Client, in *ec2.RunInstancesInput) *ec2.RunInstancesOutput {
	t.Helper()
	out, err := c.RunInstances(context.Background(), in)
	if err != nil {
		t.Fatalf("RunInstances: %v", err)
	}
	return out
}

// describe lists every instance the client's region shows, through the
// SDK's paginator.
func describe(t *testing.T, c *ec2.Client, in *ec2.DescribeInstancesInput) []types.Instance {
	t.Helper()
	var out []types.Instance
	p := ec2.NewDescribeInstancesPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("DescribeInstances: %v", err)
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out
}

func describeOne(t *testing.T, c *ec2.Client, id string) types.Instance {
	t.Helper()
	insts := describe(t, c, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if len(insts) != 1 {
		t.Fatalf("DescribeInstances(%s) returned %d instances", id, len(insts))
	}
	return insts[0]
}

// wantAPIError checks that err is the SDK's API error with this code and
// HTTP status, and returns its message.
func wantAPIError(t *testing.T, err error, code string, status int) string {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %T %v, want a smithy.APIError", err, err)
	}
	if apiErr.ErrorCode() != code {
		t.Fatalf("error code %q (%s), want %q", apiErr.ErrorCode(), apiErr.ErrorMessage(), code)
	}
	var respErr *awshttp.ResponseError
	if !errors.As(err, &respErr) {
		t.Fatalf("error %v carries no HTTP response", err)
	}
	if got := respErr.HTTPStatusCode(); got != status {
		t.Fatalf("HTTP status %d, want %d", got, status)
	}
	return apiErr.ErrorMessage()
}

func ids(insts []types.Instance) []string {
	out := make([]string, len(insts))
	for i, inst := range insts {
		out[i] = aws.ToString(inst.InstanceId)
	}
	return out
}

func tagValue(tags []types.Tag, key string) (string, bool) {
	for _, tg := range tags {
		if aws.ToString(tg.Key) == key {
			return aws.ToString(tg.Value), true
		}
	}
	return "", false
}

// network is a VPC of the test's own with one subnet and one security
// group, made through the front as a client makes them.
type network struct{ vpc, subnet, group string }

// newNetwork creates a VPC, 10.0.0.0/16, a /24 subnet of it in zone and a
// security group in it.
func newNetwork(t *testing.T, c *ec2.Client, zone string) network {
	t.Helper()
	ctx := context.Background()
	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatalf("CreateVpc: %v", err)
	}
	n := network{vpc: aws.ToString(vpc.Vpc.VpcId)}
	sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(n.vpc), CidrBlock: aws.String("10.0.1.0/24"), AvailabilityZone: aws.String(zone)})
	if err != nil {
		t.Fatalf("CreateSubnet: %v", err)
	}
	n.subnet = aws.ToString(sn.Subnet.SubnetId)
	g, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes"), Description: aws.String("the test's nodes"), VpcId: aws.String(n.vpc)})
	if err != nil {
		t.Fatalf("CreateSecurityGroup: %v", err)
	}
	n.group = aws.ToString(g.GroupId)
	return n
}
