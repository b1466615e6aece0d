// SPDX-License-Identifier: Apache-2.0

package prices

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/gpufleet/gpufleet/providers/aws"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// smallWorld is a catalog of one region and one type per cloud, for
// loaders fed hand-written pages.
func smallWorld() *catalog.Catalog {
	return &catalog.Catalog{
		Source:    "snapshot",
		FetchedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Regions: []catalog.Region{
			{Cloud: catalog.AWS, Name: "us-east-1", Geo: "us", Country: "US", Zones: []string{"us-east-1a"}},
			{Cloud: catalog.Azure, Name: "eastus", Geo: "us", Country: "US"},
			{Cloud: catalog.GCP, Name: "us-central1", Geo: "us", Country: "US", Zones: []string{"us-central1-a"}},
		},
		Offers: []catalog.Offer{
			{Cloud: catalog.AWS, Region: "us-east-1", InstanceType: "p5.48xlarge", Market: catalog.OnDemand, GPUModel: "H100", GPUs: 8, VCPUs: 192, MemoryGiB: 2048, PriceMicros: 98_320_000},
			{Cloud: catalog.Azure, Region: "eastus", InstanceType: "Standard_NC4as_T4_v3", Market: catalog.OnDemand, GPUModel: "T4", GPUs: 1, VCPUs: 4, MemoryGiB: 28, PriceMicros: 526_000},
			{Cloud: catalog.GCP, Region: "us-central1", InstanceType: "g2-standard-4", Market: catalog.OnDemand, GPUModel: "L4", GPUs: 1, VCPUs: 4, MemoryGiB: 16, PriceMicros: 707_000},
		},
	}
}

// awsDoc writes a Price List product of a GPU instance with one price
// dimension.
func awsDoc(instanceType string, gpus int, unit string, price map[string]string) string {
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"sku":           "SKU-" + instanceType,
			"attributes": map[string]string{
				"instanceType": instanceType, "regionCode": "us-east-1", "gpu": fmt.Sprint(gpus),
				"vcpu": fmt.Sprint(8 * gpus), "memory": fmt.Sprintf("%d GiB", 32*gpus), "gpuMemory": "NA",
			},
		},
		"terms": map[string]any{"OnDemand": map[string]any{"T": map[string]any{
			"priceDimensions": map[string]any{"D": map[string]any{"unit": unit, "pricePerUnit": price}},
		}}},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// priceServer answers the price APIs of the three clouds with one page
// each: AWS GetProducts (and an empty spot history), Azure's retail
// prices, GCP's SKUs.
func priceServer(t *testing.T, awsProducts []string, azureItems, gcpSKUs string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Amz-Target") == "AWSPriceListService.GetProducts":
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			json.NewEncoder(w).Encode(map[string]any{"FormatVersion": "aws_v1", "PriceList": awsProducts})
		case r.URL.Path == "/api/retail/prices":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"BillingCurrency":"USD","Items":[%s],"NextPageLink":null}`, azureItems)
		case strings.HasPrefix(r.URL.Path, "/v1/services/"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"skus":[%s]}`, gcpSKUs)
		default:
			r.ParseForm()
			if r.Form.Get("Action") != "DescribeSpotPriceHistory" {
				http.Error(w, "unexpected request", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/xml")
			io.WriteString(w, `<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><spotPriceHistorySet/><nextToken/></DescribeSpotPriceHistoryResponse>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func azureRow(size, skuName, currency, unit, price string) string {
	return azureRowIn("eastus", size, skuName, currency, unit, price)
}

func azureRowIn(region, size, skuName, currency, unit, price string) string {
	return fmt.Sprintf(`{"currencyCode":%q,"retailPrice":%s,"armRegionName":%q,"meterId":"m-%s-%s-%s","meterName":%q,"productName":"Virtual Machines","skuName":%q,"serviceName":"Virtual Machines","unitOfMeasure":%q,"type":"Consumption","armSkuName":%q}`,
		currency, price, region, region, size, skuName, skuName, skuName, unit, size)
}

func gcpPart(id, description, usage, unit, currency, units string, nanos int64) string {
	return fmt.Sprintf(`{"skuId":%q,"description":%q,"category":{"resourceFamily":"Compute","usageType":%q},"serviceRegions":["us-central1"],"pricingInfo":[{"pricingExpression":{"usageUnit":%q,"tieredRates":[{"startUsageAmount":0,"unitPrice":{"currencyCode":%q,"units":%s,"nanos":%d}}]}}]}`,
		id, description+" running in Americas", usage, unit, currency, units, nanos)
}

// A price API's bad rows — another currency, another unit, a price that is
// negative, under the floor, absurd or not a number, a row of the wrong
// shape, a type without GPU facts — are each skipped with a reason, counted
// in the summary a refresh prints, and the good rows are priced: one bad row
// never fails the refresh.
func TestBadRowsAreSkippedWithReasons(t *testing.T) {
	usd := func(p string) map[string]string { return map[string]string{"USD": p} }
	products := []string{
		awsDoc("p5.48xlarge", 8, "Hrs", usd("98.3200000000")),
		awsDoc("g4dn.xlarge", 1, "Hrs", map[string]string{"CNY": "3.5"}),
		awsDoc("g4dn.2xlarge", 1, "Hrs", map[string]string{"CNY": "5.1"}),
		awsDoc("g5.xlarge", 1, "Hrs", usd("0.0040000000")),
		awsDoc("g6.xlarge", 1, "Hrs", usd("NaN")),
		awsDoc("g6e.xlarge", 1, "Hrs", usd("-1.5")),
		awsDoc("p5e.48xlarge", 8, "Quantity", usd("32.77")),
		awsDoc("g6.2xlarge", 1, "Hrs", usd("4000")),
		awsDoc("zz9.large", 1, "Hrs", usd("1.00")),
		`{"product": {"attributes": "not an object"}}`,
	}
	azure := strings.Join([]string{
		azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3", "USD", "1 Hour", "0.526"),
		azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", "EUR", "1 Hour", "0.06"),
		azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", "USD", "1/Month", "40"),
		azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3", "USD", "1 Hour", "-3"),
		azureRow("Standard_NC4as_T4_v3", "NC4as T4 v3 Spot", "USD", "1 Hour", `"cheap"`),
		azureRow("Standard_NC8as_T4_v3", "NC8as T4 v3", "USD", "1 Hour", "0.752"),
		azureRow("Standard_D4s_v5", "D4s v5", "USD", "1 Hour", "0.192"),
	}, ",")
	gcp := strings.Join([]string{
		gcpPart("C-OD", "G2 Instance Core", "OnDemand", "h", "USD", `"0"`, 24_000_000),
		gcpPart("R-OD", "G2 Instance Ram", "OnDemand", "GiBy.h", "USD", `"0"`, 2_800_000),
		gcpPart("G-OD", "Nvidia L4 GPU", "OnDemand", "h", "USD", `"0"`, 560_000_000),
		gcpPart("C-SP", "Spot Preemptible G2 Instance Core", "Preemptible", "h", "USD", `"0"`, 9_000_000),
		gcpPart("R-SP", "Spot Preemptible G2 Instance Ram", "Preemptible", "GiBy.mo", "USD", `"0"`, 1_000_000),
		gcpPart("G-SP", "Nvidia L4 GPU attached to Spot Preemptible VMs", "Preemptible", "h", "JPY", `"30"`, 0),
		gcpPart("G-X", "Nvidia L4 GPU", "OnDemand", "h", "USD", `"lots"`, 0),
	}, ",")
	srv := priceServer(t, products, azure, gcp)

	var tally Tally
	opts := func(region string) Options {
		return Options{Regions: []string{region}, Known: smallWorld(), Endpoint: srv.URL, Retry: Retry{Max: -1}, OnDrop: tally.Add, HTTPClient: aws.LoopbackHTTPClient()}
	}
	awsLoader, err := NewAWS(context.Background(), AWSOptions{Options: opts("us-east-1"), SpotEndpoint: srv.URL, Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	azureLoader, err := NewAzure(opts("eastus"))
	if err != nil {
		t.Fatal(err)
	}
	gcpLoader, err := NewGCP(GCPOptions{Options: opts("us-central1"), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		loader  Loader
		offers  []string
		summary string
	}{
		{awsLoader, []string{"us-east-1 p5.48xlarge on-demand $98.32"},
			"9 rows skipped: 2 currency CNY, 2 malformed row, 1 implausible price, 1 not per hour (Quantity), 1 placeholder price, 1 price below floor, 1 unknown GPU model"},
		{azureLoader, []string{"eastus Standard_NC4as_T4_v3 on-demand $0.526"},
			"5 rows skipped: 1 currency EUR, 1 malformed row, 1 no instance spec, 1 not per hour (1/Month), 1 placeholder price"},
		{gcpLoader, []string{"us-central1 g2-standard-4 on-demand $0.7008"},
			"4 rows skipped: 1 currency JPY, 1 incomplete machine price, 1 malformed row, 1 not per hour (GiBy.mo)"},
	}
	for _, tt := range tests {
		t.Run(tt.loader.Cloud(), func(t *testing.T) {
			cat, err := tt.loader.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range cat.Offers {
				got = append(got, fmt.Sprintf("%s %s %s %s", o.Region, o.InstanceType, o.Market, catalog.FormatMicros(o.PriceMicros)))
			}
			diffStrings(t, "offers", got, tt.offers)
			if s := tally.Summary(tt.loader.Cloud()); s != tt.summary {
				t.Errorf("summary %q\nwant    %q", s, tt.summary)
			}
		})
	}
}

func TestTallySummary(t *testing.T) {
	var tally Tally
	if s := tally.Summary(catalog.AWS); s != "no rows skipped" {
		t.Errorf("empty: %q", s)
	}
	tally.Add(Drop{Cloud: catalog.AWS, Reason: ReasonBelowFloor})
	if s := tally.Summary(catalog.AWS); s != "1 row skipped: 1 price below floor" {
		t.Errorf("one: %q", s)
	}
	tally.Add(Drop{Cloud: catalog.AWS, Reason: ReasonCurrency, Value: "CNY"})
	tally.Add(Drop{Cloud: catalog.AWS, Reason: ReasonCurrency, Value: "CNY"})
	tally.Add(Drop{Cloud: catalog.GCP, Reason: ReasonCurrency, Value: "JPY"})
	if s := tally.Summary(catalog.AWS); s != "3 rows skipped: 2 currency CNY, 1 price below floor" {
		t.Errorf("aws: %q", s)
	}
	if n := tally.Total(catalog.GCP); n != 1 {
		t.Errorf("gcp total %d", n)
	}
}
