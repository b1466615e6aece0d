// SPDX-License-Identifier: Apache-2.0

package pricesim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// AWS serves the Price List API's GetProducts over the JSON 1.1 protocol
// (POST / with X-Amz-Target: AWSPriceListService.GetProducts). Its
// products are the world's AWS on-demand offers, each with the siblings a
// real price list has beside it — Windows, an unused reservation,
// dedicated tenancy — at other prices, so a client that forgets a filter
// gets wrong prices rather than right ones by luck.
type AWS struct {
	world *sim.World
	opts  Options
}

var _ http.Handler = (*AWS)(nil)

// NewAWS returns the Price List front of a world.
func NewAWS(world *sim.World, opts Options) *AWS { return &AWS{world: world, opts: opts} }

const (
	awsTarget      = "AWSPriceListService."
	awsContentType = "application/x-amz-json-1.1"
	awsMaxResults  = 100
)

type awsFilter struct {
	Field string `json:"Field"`
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

type getProductsInput struct {
	ServiceCode   string      `json:"ServiceCode"`
	Filters       []awsFilter `json:"Filters"`
	FormatVersion string      `json:"FormatVersion"`
	NextToken     string      `json:"NextToken"`
	MaxResults    *int        `json:"MaxResults"`
}

type getProductsOutput struct {
	FormatVersion string   `json:"FormatVersion"`
	PriceList     []string `json:"PriceList"`
	NextToken     string   `json:"NextToken,omitempty"`
}

func (s *AWS) fail(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, awsContentType, map[string]string{"__type": code, "Message": message})
}

func (s *AWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), awsTarget)
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok {
		s.fail(w, http.StatusBadRequest, "UnknownOperationException", "The requested operation is not recognized by the service.")
		return
	}
	if op != "GetProducts" && op != "GetAttributeValues" {
		s.fail(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("The emulator serves GetProducts and GetAttributeValues, not %s.", op))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && op == "GetAttributeValues" {
		s.attributeValues(w, r, body)
		return
	}
	var in getProductsInput
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, "SerializationException", "The request body is not valid JSON.")
		return
	}
	region := ""
	for _, f := range in.Filters {
		if f.Field == "regionCode" {
			region = f.Value
		}
	}
	if e := intercept(r.Context(), s.world, sim.Call{Cloud: catalog.AWS, Op: "GetProducts", Region: region}); e != nil {
		code := cmp.Or(e.Code, "InternalErrorException")
		if e.Kind == sim.KindThrottled {
			code = cmp.Or(e.Code, "ThrottlingException")
		}
		s.fail(w, faultStatus(e), code, e.Message)
		return
	}
	out, status, code, msg := s.getProducts(in)
	if status != http.StatusOK {
		s.fail(w, status, code, msg)
		return
	}
	writeJSON(w, http.StatusOK, awsContentType, out)
}

type getAttributeValuesInput struct {
	ServiceCode   string `json:"ServiceCode"`
	AttributeName string `json:"AttributeName"`
	NextToken     string `json:"NextToken"`
	MaxResults    *int   `json:"MaxResults"`
}

// attributeValues answers GetAttributeValues: the values an attribute
// takes across the EC2 products, sorted, paged as GetProducts is.
func (s *AWS) attributeValues(w http.ResponseWriter, r *http.Request, body []byte) {
	var in getAttributeValuesInput
	if err := json.Unmarshal(body, &in); err != nil {
		s.fail(w, http.StatusBadRequest, "SerializationException", "The request body is not valid JSON.")
		return
	}
	if in.ServiceCode == "" || in.AttributeName == "" {
		s.fail(w, http.StatusBadRequest, "InvalidParameterException", "Input validation failed: ServiceCode and AttributeName are required")
		return
	}
	if e := intercept(r.Context(), s.world, sim.Call{Cloud: catalog.AWS, Op: "GetAttributeValues"}); e != nil {
		code := cmp.Or(e.Code, "InternalErrorException")
		if e.Kind == sim.KindThrottled {
			code = cmp.Or(e.Code, "ThrottlingException")
		}
		s.fail(w, faultStatus(e), code, e.Message)
		return
	}
	size := awsMaxResults
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > awsMaxResults {
			s.fail(w, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("Input validation failed: MaxResults must be between 1 and %d", awsMaxResults))
			return
		}
		size = *in.MaxResults
	}
	size = s.opts.pageSize(size)
	query := in.ServiceCode + "\x00" + in.AttributeName
	offset := 0
	if in.NextToken != "" {
		n, ok := decodeToken(in.NextToken, "values", query)
		if !ok {
			s.fail(w, http.StatusBadRequest, "InvalidNextTokenException", "The next token is invalid.")
			return
		}
		offset = n
	}
	var values []string
	if in.ServiceCode == "AmazonEC2" {
		for _, p := range s.products() {
			if v := p.field(in.AttributeName); v != "" && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	start, end, more := page(len(values), offset, size)
	type value struct {
		Value string `json:"Value"`
	}
	out := struct {
		AttributeValues []value `json:"AttributeValues"`
		NextToken       string  `json:"NextToken,omitempty"`
	}{AttributeValues: []value{}}
	for _, v := range values[start:end] {
		out.AttributeValues = append(out.AttributeValues, value{v})
	}
	if more {
		out.NextToken = encodeToken("values", end, query)
	}
	writeJSON(w, http.StatusOK, awsContentType, out)
}

func (s *AWS) getProducts(in getProductsInput) (*getProductsOutput, int, string, string) {
	invalid := func(format string, args ...any) (*getProductsOutput, int, string, string) {
		return nil, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf(format, args...)
	}
	if in.ServiceCode == "" {
		return invalid("Input validation failed: ServiceCode is required")
	}
	if in.FormatVersion != "" && in.FormatVersion != "aws_v1" {
		return invalid("Input validation failed: FormatVersion %s is not supported", in.FormatVersion)
	}
	size := awsMaxResults
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > awsMaxResults {
			return invalid("Input validation failed: MaxResults must be between 1 and %d", awsMaxResults)
		}
		size = *in.MaxResults
	}
	size = s.opts.pageSize(size)
	for _, f := range in.Filters {
		if !slices.Contains([]string{"TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF"}, f.Type) || f.Field == "" {
			return invalid("Input validation failed: filter %s %q is not valid", f.Type, f.Field)
		}
	}
	query, _ := json.Marshal([]any{in.ServiceCode, in.Filters})
	offset := 0
	if in.NextToken != "" {
		n, ok := decodeToken(in.NextToken, "products", string(query))
		if !ok {
			return nil, http.StatusBadRequest, "InvalidNextTokenException", "The next token is invalid."
		}
		offset = n
	}

	var matched []string
	if in.ServiceCode == "AmazonEC2" {
		for _, p := range s.products() {
			if p.matches(in.Filters) {
				doc, err := json.Marshal(p.document())
				if err != nil {
					return nil, http.StatusInternalServerError, "InternalErrorException", err.Error()
				}
				matched = append(matched, string(doc))
			}
		}
	}
	start, end, more := page(len(matched), offset, size)
	out := &getProductsOutput{FormatVersion: "aws_v1", PriceList: matched[start:end]}
	if more {
		out.NextToken = encodeToken("products", end, string(query))
	}
	return out, http.StatusOK, "", ""
}

// awsProduct is one row of the EC2 price list.
type awsProduct struct {
	sku        string
	family     string
	attributes map[string]string
	micros     int64
}

// gpuMemoryGB is each model's memory per GPU, for the gpuMemory attribute,
// which AWS gives for the whole instance.
var gpuMemoryGB = map[string]int{
	"H100": 80, "H200": 141, "A100-40GB": 40, "A100-80GB": 80, "L40S": 48, "L4": 24, "A10G": 24, "T4": 16,
	"T4g": 16, "V100": 16, "V100-32GB": 32, "V520": 8,
}

// products lists the price list rows the world's catalog implies, in a
// stable order.
func (s *AWS) products() []awsProduct {
	var out []awsProduct
	for _, o := range regional(s.world.Catalog(), catalog.AWS, catalog.OnDemand) {
		gpuMemory := "NA"
		if per, ok := gpuMemoryGB[o.GPUModel]; ok {
			gpuMemory = fmt.Sprintf("%d GB", per*o.GPUs)
		}
		base := map[string]string{
			"instanceType":      o.InstanceType,
			"regionCode":        o.Region,
			"location":          o.Region,
			"locationType":      "AWS Region",
			"instanceFamily":    "GPU instance",
			"gpu":               strconv.Itoa(o.GPUs),
			"gpuMemory":         gpuMemory,
			"vcpu":              strconv.Itoa(o.VCPUs),
			"memory":            strconv.FormatFloat(o.MemoryGiB, 'f', -1, 64) + " GiB",
			"operatingSystem":   "Linux",
			"preInstalledSw":    "NA",
			"capacitystatus":    "Used",
			"tenancy":           "Shared",
			"licenseModel":      "No License required",
			"marketoption":      "OnDemand",
			"operation":         "RunInstances",
			"servicecode":       "AmazonEC2",
			"servicename":       "Amazon Elastic Compute Cloud",
			"usagetype":         "BoxUsage:" + o.InstanceType,
			"currentGeneration": "Yes",
		}
		variants := []struct {
			name   string
			change map[string]string
			micros int64
		}{
			{"linux", nil, o.PriceMicros},
			// Windows adds its licence per vCPU.
			{"windows", map[string]string{"operatingSystem": "Windows", "operation": "RunInstances:0002", "licenseModel": "License included"}, o.PriceMicros + int64(o.VCPUs)*46_000},
			{"unused", map[string]string{"capacitystatus": "UnusedCapacityReservation", "usagetype": "UnusedBox:" + o.InstanceType}, o.PriceMicros},
			{"dedicated", map[string]string{"tenancy": "Dedicated", "usagetype": "DedicatedUsage:" + o.InstanceType}, o.PriceMicros * 11 / 10},
		}
		for _, v := range variants {
			attrs := make(map[string]string, len(base))
			for k, val := range base {
				attrs[k] = val
			}
			for k, val := range v.change {
				attrs[k] = val
			}
			out = append(out, awsProduct{
				sku:        id("ABCDEFGHJKMNPQRSTUVWXYZ23456789", 16, o.Region, o.InstanceType, v.name),
				family:     "Compute Instance",
				attributes: attrs,
				micros:     v.micros,
			})
		}
	}
	slices.SortFunc(out, func(a, b awsProduct) int {
		return cmp.Or(cmp.Compare(a.attributes["regionCode"], b.attributes["regionCode"]), cmp.Compare(a.attributes["instanceType"], b.attributes["instanceType"]), cmp.Compare(a.sku, b.sku))
	})
	return out
}

func (p awsProduct) field(name string) string {
	if name == "productFamily" {
		return p.family
	}
	return p.attributes[name]
}

func (p awsProduct) matches(filters []awsFilter) bool {
	for _, f := range filters {
		v := p.field(f.Field)
		var ok bool
		switch f.Type {
		case "TERM_MATCH", "EQUALS":
			ok = v == f.Value
		case "CONTAINS":
			ok = strings.Contains(v, f.Value)
		case "ANY_OF":
			ok = slices.Contains(strings.Split(f.Value, ","), v)
		case "NONE_OF":
			ok = !slices.Contains(strings.Split(f.Value, ","), v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// document is the product as the price list writes it.
func (p awsProduct) document() map[string]any {
	offerTerm := p.sku + ".JRTCKXETXF"
	rate := offerTerm + ".6YS6EN2CT7"
	usd := fmt.Sprintf("%d.%06d0000", p.micros/1_000_000, p.micros%1_000_000)
	return map[string]any{
		"product":     map[string]any{"productFamily": p.family, "attributes": p.attributes, "sku": p.sku},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{offerTerm: map[string]any{
			"priceDimensions": map[string]any{rate: map[string]any{
				"unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": []string{}, "rateCode": rate,
				"description":  fmt.Sprintf("$%s per On Demand %s %s Instance Hour", usd, p.attributes["operatingSystem"], p.attributes["instanceType"]),
				"pricePerUnit": map[string]string{"USD": usd},
			}},
			"sku": p.sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": "JRTCKXETXF", "termAttributes": map[string]string{},
		}}},
		"version":         "20261101000000",
		"publicationDate": "2026-11-01T00:00:00Z",
	}
}
