// SPDX-License-Identifier: Apache-2.0

package ec2sim_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	sqtypes "github.com/aws/aws-sdk-go-v2/service/servicequotas/types"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// getQuota reads one EC2 quota through the official client.
func getQuota(c *servicequotas.Client, code string) (*sqtypes.ServiceQuota, error) {
	out, err := c.GetServiceQuota(context.Background(), &servicequotas.GetServiceQuotaInput{
		ServiceCode: aws.String("ec2"),
		QuotaCode:   aws.String(code),
	})
	if err != nil {
		return nil, err
	}
	return out.Quota, nil
}

func TestGetServiceQuota(t *testing.T) {
	f := newFixture(t, sim.Config{Quota: 64})
	f.world.SetQuota(catalog.AWS, "us-east-1", "L-417A185B", 384)
	f.world.SetQuota(catalog.AWS, "us-east-1", "L-7212CCBC", 0)

	tests := []struct {
		name, region, code string
		wantValue          float64
		wantName, wantArn  string
		wantClass          string
	}{
		{
			name: "a limit SetQuota set", region: "us-east-1", code: "L-417A185B", wantValue: 384,
			wantName: "Running On-Demand P instances", wantArn: "arn:aws:servicequotas:us-east-1:123456789012:ec2/L-417A185B", wantClass: "P/OnDemand",
		},
		{
			name: "a limit of zero", region: "us-east-1", code: "L-7212CCBC", wantValue: 0,
			wantName: "All P Spot Instance Requests", wantArn: "arn:aws:servicequotas:us-east-1:123456789012:ec2/L-7212CCBC", wantClass: "P/Spot",
		},
		{
			name: "another region keeps the default", region: "us-west-2", code: "L-417A185B", wantValue: 64,
			wantName: "Running On-Demand P instances", wantArn: "arn:aws:servicequotas:us-west-2:123456789012:ec2/L-417A185B", wantClass: "P/OnDemand",
		},
		{
			name: "the G quota", region: "us-east-1", code: "L-DB2E81BA", wantValue: 64,
			wantName: "Running On-Demand G and VT instances", wantArn: "arn:aws:servicequotas:us-east-1:123456789012:ec2/L-DB2E81BA", wantClass: "G/OnDemand",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := getQuota(f.quotas(tt.region, 1), tt.code)
			if err != nil {
				t.Fatal(err)
			}
			if q.Value == nil || *q.Value != tt.wantValue {
				t.Errorf("value %v, want %v", q.Value, tt.wantValue)
			}
			if got := aws.ToString(q.QuotaCode); got != tt.code {
				t.Errorf("quota code %q, want %q", got, tt.code)
			}
			if got := aws.ToString(q.QuotaName); got != tt.wantName {
				t.Errorf("quota name %q, want %q", got, tt.wantName)
			}
			if got := aws.ToString(q.QuotaArn); got != tt.wantArn {
				t.Errorf("ARN %q, want %q", got, tt.wantArn)
			}
			// EC2's vCPU quotas carry no unit; their usage metric says what
			// they count.
			if got := aws.ToString(q.Unit); got != "None" {
				t.Errorf("unit %q, want None", got)
			}
			if aws.ToString(q.ServiceCode) != "ec2" || !q.Adjustable || q.GlobalQuota || q.QuotaAppliedAtLevel != sqtypes.AppliedLevelEnumAccount {
				t.Errorf("quota %+v", q)
			}
			if q.UsageMetric == nil {
				t.Fatal("no usage metric")
			}
			dims := q.UsageMetric.MetricDimensions
			if dims["Class"] != tt.wantClass || dims["Resource"] != "vCPU" || dims["Service"] != "EC2" || dims["Type"] != "Resource" {
				t.Errorf("usage metric dimensions %v", dims)
			}
			if aws.ToString(q.UsageMetric.MetricNamespace) != "AWS/Usage" || aws.ToString(q.UsageMetric.MetricName) != "ResourceCount" {
				t.Errorf("usage metric %+v", q.UsageMetric)
			}
		})
	}
}

func TestServiceQuotasErrors(t *testing.T) {
	tests := []struct {
		name       string
		faults     []*sim.Fault
		attempts   int
		in         *servicequotas.GetServiceQuotaInput
		wantCode   string
		wantStatus int
		wantMsg    string
		// wantTyped checks the SDK built the modeled error type.
		wantTyped func(error) bool
		wantCalls int
	}{
		{
			name:       "a quota code EC2 lacks",
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-00000000")},
			wantCode:   "NoSuchResourceException",
			wantStatus: 404,
			wantTyped:  isType[*sqtypes.NoSuchResourceException],
			wantCalls:  1,
		},
		{
			name:       "a service the front lacks",
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("lambda"), QuotaCode: aws.String("L-B99A9384")},
			wantCode:   "NoSuchResourceException",
			wantStatus: 404,
			wantMsg:    "The request failed because the specified service does not exist.",
			wantCalls:  1,
		},
		{
			name:       "a resource-level value",
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B"), ContextId: aws.String("arn:aws:ec2:us-east-1:123456789012:instance/i-1")},
			wantCode:   "NoSuchResourceException",
			wantStatus: 404,
			wantCalls:  1,
		},
		{
			name:       "denied",
			faults:     []*sim.Fault{{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultServerError, Code: "AccessDeniedException", Times: 1}},
			attempts:   3,
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B")},
			wantCode:   "AccessDeniedException",
			wantStatus: 403,
			wantMsg:    "You do not have sufficient permission to perform this action.",
			wantTyped:  isType[*sqtypes.AccessDeniedException],
			wantCalls:  1, // a denial is not retried
		},
		{
			name:       "throttled",
			faults:     []*sim.Fault{{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultThrottle, Times: 1}},
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B")},
			wantCode:   "TooManyRequestsException",
			wantStatus: 429,
			wantTyped:  isType[*sqtypes.TooManyRequestsException],
			wantCalls:  1,
		},
		{
			name:       "a server error",
			faults:     []*sim.Fault{{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultServerError, Times: 1}},
			in:         &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B")},
			wantCode:   "ServiceException",
			wantStatus: 500,
			wantTyped:  isType[*sqtypes.ServiceException],
			wantCalls:  1,
		},
		{
			name:      "throttling ridden out by the standard retryer",
			faults:    []*sim.Fault{{Cloud: "aws", Op: "GetServiceQuota", Kind: sim.FaultThrottle, Times: 2}},
			attempts:  3,
			in:        &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B")},
			wantCalls: 3,
		},
		{
			name:      "a fault for EC2's own actions leaves Service Quotas alone",
			faults:    []*sim.Fault{{Cloud: "aws", Op: "RunInstances", Kind: sim.FaultThrottle, Times: 1}},
			in:        &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-417A185B")},
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			if err := f.world.AddFaults(tt.faults...); err != nil {
				t.Fatal(err)
			}
			_, err := f.quotas("us-east-1", tt.attempts).GetServiceQuota(context.Background(), tt.in)
			if got := f.world.Calls()["aws GetServiceQuota"]; got != tt.wantCalls {
				t.Errorf("%d calls reached the front, want %d", got, tt.wantCalls)
			}
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			msg := wantAPIError(t, err, tt.wantCode, tt.wantStatus)
			if tt.wantMsg != "" && msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
			if tt.wantTyped != nil && !tt.wantTyped(err) {
				t.Errorf("%T is not the SDK's modeled error", errors.Unwrap(err))
			}
		})
	}
}

func isType[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

func TestListServiceQuotas(t *testing.T) {
	f := newFixture(t, sim.Config{Quota: 32})
	f.world.SetQuota(catalog.AWS, "us-east-1", "L-DB2E81BA", 512)
	// Every EC2 quota the catalog names, at the world's default but one.
	all := map[string]float64{}
	for _, q := range catalog.Default().Quotas {
		if q.Cloud == catalog.AWS {
			all[q.Name] = 32
		}
	}
	all["L-DB2E81BA"] = 512

	tests := []struct {
		name      string
		region    string
		in        *servicequotas.ListServiceQuotasInput
		want      map[string]float64
		wantPages int
	}{
		{name: "every quota, one page", region: "us-east-1", in: &servicequotas.ListServiceQuotasInput{}, want: all, wantPages: 1},
		{name: "pages of one", region: "us-east-1", in: &servicequotas.ListServiceQuotasInput{MaxResults: aws.Int32(1)}, want: all, wantPages: len(all)},
		{name: "pages of three", region: "us-east-1", in: &servicequotas.ListServiceQuotasInput{MaxResults: aws.Int32(3)}, want: all, wantPages: (len(all) + 2) / 3},
		{name: "one quota code", region: "us-east-1", in: &servicequotas.ListServiceQuotasInput{QuotaCode: aws.String("L-DB2E81BA")}, want: map[string]float64{"L-DB2E81BA": 512}, wantPages: 1},
		{name: "another region", region: "eu-west-1", in: &servicequotas.ListServiceQuotasInput{QuotaCode: aws.String("L-DB2E81BA")}, want: map[string]float64{"L-DB2E81BA": 32}, wantPages: 1},
		{name: "resource-level values", region: "us-east-1", in: &servicequotas.ListServiceQuotasInput{QuotaAppliedAtLevel: sqtypes.AppliedLevelEnumResource}, want: map[string]float64{}, wantPages: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.ServiceCode = aws.String("ec2")
			got := map[string]float64{}
			pages := 0
			p := servicequotas.NewListServiceQuotasPaginator(f.quotas(tt.region, 1), tt.in)
			for p.HasMorePages() {
				page, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, q := range page.Quotas {
					code := aws.ToString(q.QuotaCode)
					if _, dup := got[code]; dup {
						t.Errorf("%s listed twice", code)
					}
					got[code] = aws.ToFloat64(q.Value)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("quotas %v, want %v", got, tt.want)
			}
			if pages != tt.wantPages {
				t.Errorf("%d pages, want %d", pages, tt.wantPages)
			}
		})
	}
}

// TestOverQuota launches past a quota: EC2 refuses with its exact error,
// and Service Quotas reads the limit that refused it.
func TestOverQuota(t *testing.T) {
	tests := []struct {
		name     string
		quota    string
		limit    int
		in       *ec2.RunInstancesInput
		wantCode string
		wantMsg  string
	}{
		{
			name: "on-demand P", quota: "L-417A185B", limit: 96,
			in:       runInput("p5.48xlarge", "us-east-1a", ""),
			wantCode: "VcpuLimitExceeded",
			wantMsg:  "You have requested more vCPU capacity than your current vCPU limit of 96 allows for the instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.",
		},
		{
			name: "spot G", quota: "L-3819A6DF", limit: 2,
			in:       spot(runInput("g4dn.xlarge", "us-east-1b", "")),
			wantCode: "MaxSpotInstanceCountExceeded",
			wantMsg:  "Max spot instance count exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, sim.Config{})
			f.world.SetQuota(catalog.AWS, "us-east-1", tt.quota, tt.limit)
			_, err := f.client("us-east-1", 1).RunInstances(context.Background(), tt.in)
			if msg := wantAPIError(t, err, tt.wantCode, 400); msg != tt.wantMsg {
				t.Errorf("message %q, want %q", msg, tt.wantMsg)
			}
			q, err := getQuota(f.quotas("us-east-1", 1), tt.quota)
			if err != nil {
				t.Fatal(err)
			}
			if got := aws.ToFloat64(q.Value); got != float64(tt.limit) {
				t.Errorf("Service Quotas reads %v, want the limit %d", got, tt.limit)
			}
		})
	}
}

// TestServiceQuotasBadInput sends what the SDK never would; each answer
// must be in the JSON protocol's error shape.
func TestServiceQuotasBadInput(t *testing.T) {
	f := newFixture(t, sim.Config{})
	const signedQuotas = "AWS4-HMAC-SHA256 Credential=AKIDSIM/20261102/us-east-1/servicequotas/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"
	get := "ServiceQuotasV20190624.GetServiceQuota"
	list := "ServiceQuotasV20190624.ListServiceQuotas"
	tests := []struct {
		name, method, target, contentType, auth, body string
		wantStatus                                    int
		wantCode                                      string
	}{
		{name: "unknown operation", target: "ServiceQuotasV20190624.RequestServiceQuotaIncrease", body: `{}`, wantStatus: 400, wantCode: "UnknownOperationException"},
		{name: "another service's target", target: "DynamoDB_20120810.ListTables", body: `{}`, wantStatus: 400, wantCode: "UnknownOperationException"},
		{name: "GET", method: http.MethodGet, target: get, wantStatus: 400, wantCode: "UnknownOperationException"},
		{name: "form content type", target: get, contentType: "application/x-www-form-urlencoded", body: `{}`, wantStatus: 400, wantCode: "SerializationException"},
		{name: "not JSON", target: get, body: `{"ServiceCode":`, wantStatus: 400, wantCode: "SerializationException"},
		{name: "a number for a string", target: get, body: `{"ServiceCode":5,"QuotaCode":"L-417A185B"}`, wantStatus: 400, wantCode: "SerializationException"},
		{name: "no quota code", target: get, body: `{"ServiceCode":"ec2"}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "a malformed quota code", target: get, body: `{"ServiceCode":"ec2","QuotaCode":"L 417"}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "signed for EC2", target: get, auth: signedEast, body: `{"ServiceCode":"ec2","QuotaCode":"L-417A185B"}`, wantStatus: 403, wantCode: "InvalidSignatureException"},
		{name: "a region the catalog lacks", target: get, auth: strings.Replace(signedQuotas, "us-east-1", "mars-north-1", 1), body: `{"ServiceCode":"ec2","QuotaCode":"L-417A185B"}`, wantStatus: 403, wantCode: "InvalidSignatureException"},
		{name: "list: no service code", target: list, body: `{}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "list: page of zero", target: list, body: `{"ServiceCode":"ec2","MaxResults":0}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "list: page past the largest", target: list, body: `{"ServiceCode":"ec2","MaxResults":101}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "list: a token of nothing", target: list, body: `{"ServiceCode":"ec2","NextToken":"bm9wZQ=="}`, wantStatus: 400, wantCode: "InvalidPaginationTokenException"},
		{name: "list: a token past the end", target: list, body: `{"ServiceCode":"ec2","NextToken":"cXVvdGFzOjk5"}`, wantStatus: 400, wantCode: "InvalidPaginationTokenException"},
		{name: "list: an unknown level", target: list, body: `{"ServiceCode":"ec2","QuotaAppliedAtLevel":"ORG"}`, wantStatus: 400, wantCode: "IllegalArgumentException"},
		{name: "an unsigned call", target: get, auth: "-", body: `{"ServiceCode":"ec2","QuotaCode":"L-417A185B"}`, wantStatus: 200},
		{name: "an empty body", target: list, body: ``, wantStatus: 400, wantCode: "IllegalArgumentException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, f.url+"/", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Amz-Target", tt.target)
			req.Header.Set("Content-Type", cmp.Or(tt.contentType, "application/x-amz-json-1.1"))
			if auth := cmp.Or(tt.auth, signedQuotas); auth != "-" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, raw, tt.wantStatus)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
				t.Errorf("Content-Type %q", ct)
			}
			if resp.Header.Get("X-Amzn-RequestId") == "" {
				t.Error("no X-Amzn-RequestId")
			}
			if tt.wantStatus == 200 {
				return
			}
			var body struct {
				Type string `json:"__type"`
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("error body %s is not JSON: %v", raw, err)
			}
			if got := resp.Header.Get("X-Amzn-ErrorType"); got != tt.wantCode || !strings.HasSuffix(body.Type, "#"+tt.wantCode) {
				t.Errorf("error type %q, body %q, want %s", got, body.Type, tt.wantCode)
			}
		})
	}
}

// TestRandomQuotaCalls throws seeded random JSON at both operations: each
// must be answered, and none may reach the panic guard (which answers
// ServiceException).
func TestRandomQuotaCalls(t *testing.T) {
	f := newFixture(t, sim.Config{})
	const signedQuotas = "AWS4-HMAC-SHA256 Credential=AKIDSIM/20261102/us-east-1/servicequotas/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"
	targets := []string{"ServiceQuotasV20190624.GetServiceQuota", "ServiceQuotasV20190624.ListServiceQuotas"}
	keys := []string{"ServiceCode", "QuotaCode", "ContextId", "MaxResults", "NextToken", "QuotaAppliedAtLevel", "Extra"}
	values := []any{"ec2", "L-417A185B", "L-", "", "ALL", "RESOURCE", 0, 1, -1, 100, 1e300, 2.5, nil, true, []any{"x"}, map[string]any{}, "cXVvdGFzOjE=", "quotas:1", strings.Repeat("Z", 3000)}
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 800 {
		body := map[string]any{}
		for range rng.IntN(5) {
			body[keys[rng.IntN(len(keys))]] = values[rng.IntN(len(values))]
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, f.url+"/", strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Target", targets[rng.IntN(len(targets))])
		req.Header.Set("Content-Type", "application/x-amz-json-1.1")
		req.Header.Set("Authorization", signedQuotas)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 || !json.Valid(answer) {
			t.Fatalf("call %d %s: %d %s", i, raw, resp.StatusCode, answer)
		}
	}
}
