// SPDX-License-Identifier: Apache-2.0

package ec2sim

import (
	"cmp"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

type spotPriceXML struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

type spotPriceHistoryResponse struct {
	XMLName   xml.Name       `xml:"DescribeSpotPriceHistoryResponse"`
	Xmlns     string         `xml:"xmlns,attr"`
	RequestID string         `xml:"requestId"`
	Prices    []spotPriceXML `xml:"spotPriceHistorySet>item"`
	NextToken string         `xml:"nextToken,omitempty"`
}

// linuxProduct is the only product the catalog prices; the VPC variant is
// EC2's older name for the same price.
const linuxProduct = "Linux/UNIX"

var spotPriceFilters = map[string]bool{"availability-zone": true, "instance-type": true, "product-description": true, "spot-price": true, "timestamp": true}

// describeSpotPriceHistory answers with the spot prices per zone and type
// in force over a window, from the catalog, which holds one price per
// place (a zone's own row, else its region's), and with Options.SpotHistory
// from a seeded past before it. A StartTime of now is the latest price.
func (s *Server) describeSpotPriceHistory(req *request) (any, *apiError) {
	form := req.form
	types := list(form, "InstanceType")
	zone := form.Get("AvailabilityZone")
	single := ""
	if len(types) == 1 {
		single = types[0]
	}
	outcome, apiErr := s.intercept(req, zone, single)
	if apiErr != nil {
		return nil, apiErr
	}
	if outcome.Err != nil {
		return nil, s.worldError(outcome.Err, launchContext{region: req.region, zone: zone, instanceType: single, market: catalog.Spot})
	}

	if zone != "" {
		if region, ok := s.world.ZoneRegion(cloud, zone); !ok || region != req.region {
			return nil, invalidValue("Invalid availability zone: [%s]", zone)
		}
	}
	fs, apiErr := knownFilters(form, spotPriceFilters, false)
	if apiErr != nil {
		return nil, apiErr
	}
	start, apiErr := timeParam(form.Get("StartTime"), "startTime")
	if apiErr != nil {
		return nil, apiErr
	}
	end, apiErr := timeParam(form.Get("EndTime"), "endTime")
	if apiErr != nil {
		return nil, apiErr
	}
	if !start.IsZero() && !end.IsZero() && end.Before(start) {
		return nil, invalidValue("The end time must be later than the start time.")
	}
	maxResults, hasMax, apiErr := intParam(form, "MaxResults")
	if apiErr != nil {
		return nil, apiErr
	}
	if hasMax && (maxResults < 0 || maxResults > 1000) {
		return nil, invalidValue("Value ( %d ) for parameter maxResults is invalid. Expecting a value between 0 and 1000.", maxResults)
	}
	if !hasMax || maxResults == 0 {
		maxResults = 1000
	}
	offset, asOf, apiErr := decodeSpotToken(form.Get("NextToken"), s.world.Now().UTC())
	if apiErr != nil {
		return nil, apiErr
	}
	// Without a start, everything EC2 keeps; without an end, up to now.
	if start.IsZero() {
		start = asOf.Add(-spotHistoryKept)
	}
	if end.IsZero() || end.After(asOf) {
		end = asOf
	}

	products := list(form, "ProductDescription")
	var prices []spotPriceXML
	if len(products) == 0 || slices.ContainsFunc(products, isLinuxProduct) {
		for _, p := range s.spotHistoryPoints(req.region, spotWindow{start: start, end: end, zone: zone, types: types}, asOf) {
			price := dollars(p.micros)
			if !matchesAll(fs, map[string][]string{
				"availability-zone":   {p.zone},
				"instance-type":       {p.instanceType},
				"product-description": {linuxProduct},
				"spot-price":          {price},
				"timestamp":           spotTimestamps(p.at),
			}) {
				continue
			}
			prices = append(prices, spotPriceXML{
				AvailabilityZone:   p.zone,
				InstanceType:       p.instanceType,
				ProductDescription: linuxProduct,
				SpotPrice:          price,
				Timestamp:          p.at.Format(spotTimeFormat),
			})
		}
	}

	out := spotPriceHistoryResponse{Xmlns: xmlns, RequestID: req.id}
	if offset > len(prices) {
		return nil, invalidPaginationToken()
	}
	page := prices[offset:]
	if len(page) > maxResults {
		page = page[:maxResults]
		out.NextToken = encodeSpotToken(offset+maxResults, asOf)
	}
	out.Prices = page
	return out, nil
}

func isLinuxProduct(p string) bool { return p == linuxProduct || p == linuxProduct+" (Amazon VPC)" }

// spotQuote is the spot price of a type in a zone.
type spotQuote struct {
	zone, instanceType string
	micros             int64
}

// spotQuotes lists the region's spot prices by zone and type, a zone's own
// catalog row taking precedence over its region's.
func (s *Server) spotQuotes(region string) []spotQuote {
	r, ok := s.world.Region(cloud, region)
	if !ok {
		return nil
	}
	type key struct{ zone, instanceType string }
	price := map[key]int64{}
	zonal := map[key]bool{}
	for _, o := range s.world.Catalog().Offers {
		if o.Cloud != cloud || o.Region != region || o.Market != catalog.Spot || o.PriceMicros <= 0 {
			continue
		}
		for _, z := range r.Zones {
			k := key{z, o.InstanceType}
			switch {
			case o.Zone == z:
				price[k], zonal[k] = o.PriceMicros, true
			case o.Zone == "" && !zonal[k]:
				price[k] = o.PriceMicros
			}
		}
	}
	out := make([]spotQuote, 0, len(price))
	for k, p := range price {
		out = append(out, spotQuote{zone: k.zone, instanceType: k.instanceType, micros: p})
	}
	slices.SortFunc(out, func(a, b spotQuote) int {
		return cmp.Or(cmp.Compare(a.zone, b.zone), cmp.Compare(a.instanceType, b.instanceType))
	})
	return out
}

// spotPrice is the price a spot launch in a zone pays.
func (s *Server) spotPrice(region, zone, instanceType string) (int64, bool) {
	for _, q := range s.spotQuotes(region) {
		if q.zone == zone && q.instanceType == instanceType {
			return q.micros, true
		}
	}
	return 0, false
}

// dollars writes micro-dollars as EC2 writes prices, "30.330000".
func dollars(micros int64) string {
	return fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
}

func timeParam(raw, name string) (time.Time, *apiError) {
	if raw == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, invalidValue("Invalid value '%s' for %s. Expected an ISO 8601 timestamp.", raw, name)
	}
	return t, nil
}

// Pagination tokens are opaque to clients: a kind and a position, so a
// token of one action is refused by another.
func encodeToken(kind string, position uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.FormatUint(position, 10)))
}

// nextToken reads a call's NextToken, a position in a listing of this
// kind; none is the start, 0.
func nextToken(form url.Values, kind string) (uint64, *apiError) {
	token := form.Get("NextToken")
	if token == "" {
		return 0, nil
	}
	n, ok := decodeToken(token, kind)
	if !ok {
		return 0, invalidPaginationToken()
	}
	return n, nil
}

func decodeToken(token, kind string) (uint64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(raw), kind+":")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}

func invalidPaginationToken() *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "InvalidPaginationToken", Message: "The specified pagination token is not valid or is expired."}
}

// matchesAll reports whether a resource with these values passes every
// filter.
func matchesAll(fs []filter, values map[string][]string) bool {
	for _, f := range fs {
		if !f.matches(values[f.name]) {
			return false
		}
	}
	return true
}
