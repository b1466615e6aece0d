// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// AWSOptions tune the AWS loader.
type AWSOptions struct {
	Options
	// SpotEndpoint replaces EC2's endpoint in every region, for
	// DescribeSpotPriceHistory. (Options.Endpoint replaces the Price List
	// API's.)
	SpotEndpoint string
	// Credentials replace the SDK's credential chain. For emulators only:
	// real accounts are reached through the standard chain.
	Credentials awssdk.CredentialsProvider
	// PricingRegion is where the Price List API is called; it answers in
	// us-east-1, ap-south-1 and eu-central-1. Empty means us-east-1.
	PricingRegion string
}

// AWS reads on-demand prices from the Price List API (GetProducts) and
// spot prices from EC2's spot price history, region by region.
type AWS struct {
	b       *base
	pricing *pricing.Client
	spot    map[string]*ec2.Client // by region
	// ec2 builds the client of a region found in the price list.
	ec2 func(region string) *ec2.Client
}

var _ Loader = (*AWS)(nil)

// linuxSpot is the spot product priced: Linux on shared tenancy.
const linuxSpot = "Linux/UNIX"

// awsProductFilters select what gpufleet launches: Linux with no
// pre-installed software, on shared hardware, the price of a running
// instance rather than of an unused reservation.
var awsProductFilters = [][2]string{
	{"operatingSystem", "Linux"},
	{"preInstalledSw", "NA"},
	{"capacitystatus", "Used"},
	{"tenancy", "Shared"},
	{"productFamily", "Compute Instance"},
}

// awsGPUs names the accelerator of each AWS accelerated instance family
// as EC2 does (DescribeInstanceTypes' GpuInfo): the Price List says how
// many GPUs an instance has and how much GPU memory, never which GPU. An
// "A100" or a "V100" is told apart by its memory per GPU. A family whose
// accelerator gpufleet has no model for is dropped as an unknown GPU, and
// counted, rather than priced under a wrong name.
var awsGPUs = map[string]string{
	"p5":    "H100",
	"p5e":   "H200",
	"p5en":  "H200",
	"p4d":   "A100",
	"p4de":  "A100",
	"p3":    "V100",
	"p3dn":  "V100",
	"g6e":   "L40S",
	"g6":    "L4",
	"gr6":   "L4",
	"g5":    "A10G",
	"g5g":   "T4g",
	"g4dn":  "T4",
	"g4ad":  "Radeon Pro V520",
	"dl1":   "Gaudi HL-205",
	"dl2q":  "Qualcomm AI100",
	"inf1":  "Inferentia",
	"inf2":  "Inferentia2",
	"trn1":  "Trainium",
	"trn1n": "Trainium",
	"trn2":  "Trainium2",
}

// NewAWS builds the AWS loader. It reads the SDK's shared configuration
// but calls no API: credentials are resolved on first use.
func NewAWS(ctx context.Context, opts AWSOptions) (*AWS, error) {
	b, err := newBase(catalog.AWS, opts.Options)
	if err != nil {
		return nil, err
	}
	cfg, err := awsConfig(ctx, b, opts)
	if err != nil {
		return nil, fmt.Errorf("aws prices, %w", err)
	}
	pricingRegion := opts.PricingRegion
	if pricingRegion == "" {
		pricingRegion = "us-east-1"
	}
	b.what = "AWS Price List and EC2 spot price history"
	a := &AWS{b: b, spot: ec2Clients(cfg, b, opts), ec2: func(region string) *ec2.Client { return ec2Client(cfg, region, opts) }}
	a.pricing = pricing.NewFromConfig(cfg, func(o *pricing.Options) {
		o.Region = pricingRegion
		if opts.Endpoint != "" {
			o.BaseEndpoint = awssdk.String(opts.Endpoint)
		}
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
	})
	return a, nil
}

// awsConfig is the SDK configuration the AWS loaders share: the standard
// chain's credentials unless opts gives some, and gpufleet's retryer.
func awsConfig(ctx context.Context, b *base, opts AWSOptions) (awssdk.Config, error) {
	load := []func(*config.LoadOptions) error{
		config.WithRetryer(func() awssdk.Retryer { return newAWSRetryer(b.retry) }),
	}
	if opts.Credentials != nil {
		load = append(load, config.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return cfg, fmt.Errorf("loading the SDK configuration, %w", err)
	}
	return cfg, nil
}

// ec2Clients are an EC2 client for each region the loader reads, at
// opts.SpotEndpoint when set.
func ec2Clients(cfg awssdk.Config, b *base, opts AWSOptions) map[string]*ec2.Client {
	out := map[string]*ec2.Client{}
	for _, r := range b.regions {
		out[r.Name] = ec2Client(cfg, r.Name, opts)
	}
	return out
}

func ec2Client(cfg awssdk.Config, region string, opts AWSOptions) *ec2.Client {
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) {
		o.Region = region
		if opts.SpotEndpoint != "" {
			o.BaseEndpoint = awssdk.String(opts.SpotEndpoint)
		}
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
	})
}

// newAWSRetryer retries what the SDK's standard retryer does (throttling,
// 5xx, connection errors) within retry's bounds. The client-side retry
// quota is off: the attempts are bounded already, and a refresh that
// meets a burst of throttling should wait, not give up.
func newAWSRetryer(r Retry) awssdk.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = r.Max + 1
		o.MaxBackoff = r.MaxWait
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return backoff(r.MinWait, r.MaxWait, attempt-1, nil), nil
		})
	})
}

// Cloud is "aws".
func (a *AWS) Cloud() string { return catalog.AWS }

// Load reads every region's on-demand and spot prices: of the regions it
// was given, or of every region the Price List has.
func (a *AWS) Load(ctx context.Context) (*catalog.Catalog, error) {
	if a.b.discover {
		if err := a.listRegions(ctx); err != nil {
			return nil, err
		}
	}
	c := a.b.collector()
	names := make([]string, len(a.b.regions))
	for i, r := range a.b.regions {
		names[i] = r.Name
	}
	for _, name := range names {
		r, _ := a.b.region(name)
		in := a.b.collector()
		specs, err := a.onDemand(ctx, *r, in)
		if err != nil {
			return nil, err
		}
		err = a.spotPrices(ctx, name, specs, in)
		if a.b.discover && notEnabled(err) {
			// A region the account has not opted in to has no spot
			// prices to read; left out, it keeps the prices it had.
			a.b.log.Warn("the account cannot read this region's spot prices; its old prices are kept", "cloud", a.b.cloud, "region", name, "error", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		c.take(in)
	}
	return c.catalog()
}

// listRegions adds the regions the Price List prices EC2 in.
func (a *AWS) listRegions(ctx context.Context) error {
	pages := pricing.NewGetAttributeValuesPaginator(a.pricing, &pricing.GetAttributeValuesInput{
		ServiceCode: awssdk.String("AmazonEC2"), AttributeName: awssdk.String("regionCode"), MaxResults: awssdk.Int32(100),
	})
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return fmt.Errorf("aws regions, more than %d pages", maxPages)
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the regions of the AWS price list, %w", err)
		}
		for _, v := range page.AttributeValues {
			a.b.addRegion(awssdk.ToString(v.Value))
		}
	}
	return nil
}

// notEnabled reports an EC2 answer that the account may not call the
// region: an opt-in region it has not enabled.
func notEnabled(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "OptInRequired", "AuthFailure", "UnauthorizedOperation":
		return true
	}
	return false
}

// awsProduct is one PriceList entry, a JSON document in a string.
type awsProduct struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
		SKU           string            `json:"sku"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// onDemand reads a region's products and collects the GPU instances'
// on-demand offers. It returns every GPU instance type it met with its
// spec, priced or not, for the spot query.
func (a *AWS) onDemand(ctx context.Context, region catalog.Region, c *collector) (map[string]shape, error) {
	in := &pricing.GetProductsInput{
		ServiceCode:   awssdk.String("AmazonEC2"),
		FormatVersion: awssdk.String("aws_v1"),
		MaxResults:    awssdk.Int32(100),
		Filters:       []pricingtypes.Filter{termMatch("regionCode", region.Name)},
	}
	for _, f := range awsProductFilters {
		in.Filters = append(in.Filters, termMatch(f[0], f[1]))
	}
	specs := map[string]shape{}
	pages := pricing.NewGetProductsPaginator(a.pricing, in)
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return nil, fmt.Errorf("aws prices in %s, more than %d pages of products", region.Name, maxPages)
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing AWS prices in %s, %w", region.Name, err)
		}
		for _, raw := range page.PriceList {
			a.product(region, raw, specs, c)
		}
	}
	return specs, nil
}

func termMatch(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: awssdk.String(field), Value: awssdk.String(value)}
}

// product collects one product's on-demand offer from its JSON document.
// A document that cannot be read is one row dropped, not the refresh.
func (a *AWS) product(region catalog.Region, raw string, specs map[string]shape, c *collector) {
	var p awsProduct
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		a.b.drop(Drop{Region: region.Name, Market: catalog.OnDemand, Reason: ReasonMalformed, Detail: err.Error()})
		return
	}
	attrs := p.Product.Attributes
	instanceType := attrs["instanceType"]
	if instanceType == "" || attrs["regionCode"] != region.Name {
		return
	}
	gpus := attrInt(attrs["gpu"])
	if gpus <= 0 {
		return // not a GPU instance
	}
	drop := Drop{Region: region.Name, InstanceType: instanceType, Market: catalog.OnDemand, Row: p.Product.SKU}
	s, reason, detail := a.spec(instanceType, attrs)
	if reason != "" {
		drop.Reason, drop.Detail = reason, detail
		a.b.drop(drop)
		return
	}
	specs[instanceType] = s

	// One term with one hourly dimension in US$ is the rule; of several,
	// the dearest, as for duplicate rows. What a row has instead of it
	// says why it is dropped.
	var price float64
	var found bool
	var units, currencies []string
	for _, term := range p.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				for code, v := range dim.PricePerUnit {
					if strings.TrimSpace(v) != "" {
						currencies = append(currencies, code)
					}
				}
				continue
			}
			if strings.TrimSpace(usd) == "" {
				continue
			}
			if dim.Unit != "Hrs" {
				units = append(units, cmpOr(dim.Unit, "no unit"))
				continue
			}
			v, ok := parseDollars(usd)
			if !ok {
				drop.Reason, drop.Detail = ReasonMalformed, fmt.Sprintf("USD %q", usd)
				a.b.drop(drop)
				return
			}
			if !found || v > price {
				price, found = v, true
			}
		}
	}
	switch {
	case !found && len(units) > 0:
		slices.Sort(units)
		drop.Reason, drop.Value = ReasonUnit, strings.Join(slices.Compact(units), ",")
		a.b.drop(drop)
		return
	case !found && len(currencies) > 0:
		slices.Sort(currencies)
		drop.Reason, drop.Value = ReasonCurrency, strings.Join(slices.Compact(currencies), ",")
		a.b.drop(drop)
		return
	case !found:
		drop.Reason = ReasonNoPrice
		a.b.drop(drop)
		return
	}
	c.add(catalog.Offer{
		Region: region.Name, InstanceType: instanceType, Market: catalog.OnDemand,
		GPUModel: s.gpuModel, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
	}, price, p.Product.SKU)
}

// spec reads an instance's GPUs, vCPUs and memory from its attributes,
// filling in from the catalog what they lack, and names its GPU.
func (a *AWS) spec(instanceType string, attrs map[string]string) (shape, string, string) {
	known, isKnown := a.b.shapes[instanceType]
	s := shape{gpus: attrInt(attrs["gpu"]), vcpus: attrInt(attrs["vcpu"]), memoryGiB: attrGiB(attrs["memory"])}
	if s.vcpus <= 0 {
		s.vcpus = known.vcpus
	}
	if s.memoryGiB <= 0 {
		s.memoryGiB = known.memoryGiB
	}
	if s.gpus <= 0 || s.vcpus <= 0 || s.memoryGiB <= 0 {
		return shape{}, ReasonNoSpec, ""
	}

	family, _, _ := strings.Cut(instanceType, ".")
	name, named := awsGPUs[family]
	if named {
		// The memory per GPU decides first: a name may be ambiguous
		// ("A100") or the smaller part's own ("V100" is the 16GB one,
		// p3dn's are 32GB). AWS gives the instance's total; a per-GPU
		// figure is tried too.
		if mem := attrGiB(attrs["gpuMemory"]); mem > 0 {
			for _, per := range []float64{mem / float64(s.gpus), mem} {
				if model, ok := catalog.NormalizeGPU(fmt.Sprintf("%s %gGB", name, per)); ok {
					s.gpuModel = model
					return s, "", ""
				}
			}
		}
		if model, ok := catalog.NormalizeGPU(name); ok {
			s.gpuModel = model
			return s, "", ""
		}
	}
	if isKnown {
		s.gpuModel = known.gpuModel
		return s, "", ""
	}
	if named {
		return shape{}, ReasonUnknownGPU, fmt.Sprintf("%s with %s of GPU memory", name, cmpOr(attrs["gpuMemory"], "no figure"))
	}
	return shape{}, ReasonUnknownGPU, "family " + family
}

// spotPrices reads a region's current spot prices for the GPU types its
// products listed, and collects an offer per zone, or one for the whole
// region when every zone has the same price.
func (a *AWS) spotPrices(ctx context.Context, regionName string, specs map[string]shape, c *collector) error {
	if len(specs) == 0 {
		return nil
	}
	client, ok := a.spot[regionName]
	if !ok {
		client = a.ec2(regionName)
		a.spot[regionName] = client
	}
	r, _ := a.b.region(regionName)
	region := *r
	// A region the catalog has no zones of takes them from the spot
	// prices: EC2 answers for the zones the account has.
	learnZones := len(region.Zones) == 0
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{linuxSpot},
		// From now: EC2 answers with the price in force in each zone.
		StartTime: awssdk.Time(a.b.now()),
	}
	for _, t := range sortedKeys(specs) {
		in.InstanceTypes = append(in.InstanceTypes, ec2types.InstanceType(t))
	}

	type zoneType struct{ zone, instanceType string }
	prices := map[zoneType]spotRow{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(client, in)
	for n := 0; pages.HasMorePages(); n++ {
		if n == maxPages {
			return fmt.Errorf("aws spot prices in %s, more than %d pages", region.Name, maxPages)
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing AWS spot prices in %s, %w", region.Name, err)
		}
		for _, h := range page.SpotPriceHistory {
			if h.ProductDescription != linuxSpot {
				continue
			}
			zone, instanceType := awssdk.ToString(h.AvailabilityZone), string(h.InstanceType)
			s, ok := specs[instanceType]
			if !ok {
				continue
			}
			at := awssdk.ToTime(h.Timestamp)
			row := "spot price of " + at.UTC().Format(time.RFC3339)
			drop := Drop{Region: region.Name, Zone: zone, InstanceType: instanceType, Market: catalog.Spot, Row: row}
			if learnZones && !slices.Contains(region.Zones, zone) && zoneOf(zone, region.Name) {
				region.Zones = append(region.Zones, zone)
			}
			if !slices.Contains(region.Zones, zone) {
				drop.Reason = ReasonUnknownZone
				a.b.drop(drop)
				continue
			}
			usd := awssdk.ToString(h.SpotPrice)
			dollars, ok := parseDollars(usd)
			if !ok {
				drop.Reason, drop.Detail = ReasonMalformed, fmt.Sprintf("%q", usd)
				a.b.drop(drop)
				continue
			}
			micros, reason, detail := checkPrice(dollars, s.gpus)
			if reason != "" {
				drop.Reason, drop.Detail = reason, detail
				a.b.drop(drop)
				continue
			}
			k := zoneType{zone, instanceType}
			held, ok := prices[k]
			switch {
			case !ok || at.After(held.at):
				// A later price replaces an earlier one: that is history,
				// not a duplicate.
				prices[k] = spotRow{at, micros, row}
			case at.Equal(held.at):
				drop.Reason = ReasonDuplicate
				if micros > held.micros {
					drop.Detail = fmt.Sprintf("%s kept over %s", catalog.FormatMicros(micros), catalog.FormatMicros(held.micros))
					prices[k] = spotRow{at, micros, row}
				} else {
					drop.Detail = fmt.Sprintf("%s kept over %s", catalog.FormatMicros(held.micros), catalog.FormatMicros(micros))
				}
				a.b.drop(drop)
			}
		}
	}

	if learnZones {
		slices.Sort(region.Zones)
		r, _ := a.b.region(regionName)
		r.Zones = region.Zones
	}
	byType := map[string]map[string]spotRow{}
	for k, p := range prices {
		if byType[k.instanceType] == nil {
			byType[k.instanceType] = map[string]spotRow{}
		}
		byType[k.instanceType][k.zone] = p
	}
	for _, instanceType := range sortedKeys(byType) {
		zones := byType[instanceType]
		s := specs[instanceType]
		offer := catalog.Offer{
			Region: region.Name, InstanceType: instanceType, Market: catalog.Spot,
			GPUModel: s.gpuModel, GPUs: s.gpus, VCPUs: s.vcpus, MemoryGiB: s.memoryGiB,
		}
		if price, ok := samePriceEverywhere(zones, region.Zones); ok {
			// Spot is priced per zone; where the zones agree, one regional
			// offer says so, as the snapshot does.
			offer.PriceMicros = price.micros
			c.put(offer, price.row)
			continue
		}
		for _, zone := range sortedKeys(zones) {
			offer.Zone, offer.PriceMicros = zone, zones[zone].micros
			c.put(offer, zones[zone].row)
		}
	}
	return nil
}

// zoneOf reports whether an AWS zone name is one of the region's:
// the region's name and a letter ("eu-west-3a").
func zoneOf(zone, region string) bool {
	rest, ok := strings.CutPrefix(zone, region)
	return ok && len(rest) == 1 && rest[0] >= 'a' && rest[0] <= 'z'
}

// samePriceEverywhere reports the price when every zone of the region has
// one and they are all equal.
func samePriceEverywhere(byZone map[string]spotRow, zones []string) (spotRow, bool) {
	if len(zones) == 0 || len(byZone) != len(zones) {
		return spotRow{}, false
	}
	first, ok := byZone[zones[0]]
	if !ok {
		return spotRow{}, false
	}
	for _, z := range zones[1:] {
		if p, ok := byZone[z]; !ok || p.micros != first.micros {
			return spotRow{}, false
		}
	}
	return first, true
}

// spotRow is the latest spot price of a type in a zone.
type spotRow struct {
	at     time.Time
	micros int64
	row    string
}

// attrInt reads a count attribute: "8"; "NA" and "" are zero.
func attrInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(s, ",", "")))
	if err != nil {
		return 0
	}
	return n
}

// attrGiB reads a size attribute, "2,048 GiB" or "640 GB", as a number;
// "NA" and "" are zero.
func attrGiB(s string) float64 {
	num, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(strings.ReplaceAll(num, ",", ""), 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func cmpOr(s, fallback string) string {
	if s == "" || s == "NA" {
		return fallback
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
