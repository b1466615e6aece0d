// SPDX-License-Identifier: Apache-2.0

package pricesim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
	"github.com/gpufleet/gpufleet/schema/catalog"
)

// Options configure the fronts.
type Options struct {
	// PageSize caps every page below the API's own size (100 products,
	// 100 retail prices, 5000 SKUs), so tests see several pages. Zero
	// keeps the APIs' sizes.
	PageSize int
	// RetryAfter is the Retry-After, in whole seconds, sent with a 429.
	// Zero means 1.
	RetryAfter int
	// APIKey, when set, is the only key the billing catalog accepts;
	// otherwise any non-empty key is.
	APIKey string
}

func (o Options) pageSize(apiDefault int) int {
	if o.PageSize > 0 && o.PageSize < apiDefault {
		return o.PageSize
	}
	return apiDefault
}

func (o Options) retryAfter() string {
	if o.RetryAfter > 0 {
		return strconv.Itoa(o.RetryAfter)
	}
	return "1"
}

// faultStatus is the HTTP status a world failure is answered with: 429
// for throttling, 503 when a fault names a service-unavailable code, 500
// otherwise. A price API knows nothing of capacity or quota; such faults
// read as server errors.
func faultStatus(err *sim.Error) int {
	switch {
	case err.Kind == sim.KindThrottled:
		return http.StatusTooManyRequests
	case strings.EqualFold(err.Code, "ServiceUnavailable"), strings.EqualFold(err.Code, "UNAVAILABLE"):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// intercept lets the world's faults act on a call; it waits out injected
// latency and returns the error to answer with, if any.
func intercept(ctx context.Context, world *sim.World, call sim.Call) *sim.Error {
	out := world.Intercept(call)
	if !sim.Wait(ctx, out.Latency) {
		return &sim.Error{Kind: sim.KindServerError, Message: "the request was cancelled"}
	}
	return out.Err
}

// Page tokens are opaque to clients: a kind, a position and a digest of
// the query they page through, so a token of one query is refused by
// another.
func encodeToken(kind string, position int, query string) string {
	sum := sha256.Sum256([]byte(query))
	b := binary.BigEndian.AppendUint32([]byte(kind+":"), uint32(position))
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:6]...))
}

func decodeToken(token, kind, query string) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(raw), kind+":") {
		return 0, false
	}
	rest := raw[len(kind)+1:]
	sum := sha256.Sum256([]byte(query))
	if len(rest) != 4+6 || string(rest[4:]) != string(sum[:6]) {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(rest[:4])), true
}

// id derives a stable identifier from parts, in the alphabet and length a
// cloud uses.
func id(alphabet string, n int, parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	out := make([]byte, n)
	for i := range out {
		out[i] = alphabet[int(sum[i%len(sum)]+byte(i/len(sum)))%len(alphabet)]
	}
	return string(out)
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding the answer: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(body)
}

// page cuts one page out of n items from offset.
func page(n, offset, size int) (start, end int, more bool) {
	start = min(offset, n)
	end = min(start+size, n)
	return start, end, end < n
}

// regional is a cloud's offers on a market as a regional price list
// writes them: one per region and type, priced where the catalog prices
// the type in the whole region, else at the dearest of its zones' prices.
// The Price List and the billing catalog price a type per region; a
// catalog that lists a type zone by zone holds one price per zone.
func regional(cat *catalog.Catalog, cloud string, market catalog.Market) []catalog.Offer {
	type key struct{ region, instanceType string }
	byKey := map[key]catalog.Offer{}
	whole := map[key]bool{}
	var order []key
	for _, o := range cat.Offers {
		if o.Cloud != cloud || o.Market != market || o.PriceMicros <= 0 {
			continue
		}
		k := key{o.Region, o.InstanceType}
		held, ok := byKey[k]
		switch {
		case !ok:
			order = append(order, k)
		case whole[k] && o.Zone != "":
			continue
		case o.Zone != "" && held.PriceMicros >= o.PriceMicros:
			continue
		}
		whole[k] = whole[k] || o.Zone == ""
		o.Zone = ""
		byKey[k] = o
	}
	out := make([]catalog.Offer, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}
