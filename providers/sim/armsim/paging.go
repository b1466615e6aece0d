// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
)

// span is the half-open range of a listing one page holds.
type span struct{ start, end int }

const offsetTokenPrefix = "offset:"

// offsetPage cuts the page a request asks for out of a listing of n items
// that is the same on every call, so that the skip token can be the
// offset of the page's first item. The next link keeps the request's
// query but its skip token.
func (s *Server) offsetPage(r *http.Request, n int) (span, *string, *armError) {
	q := r.URL.Query()
	from := 0
	if token := q.Get("$skiptoken"); token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		off, perr := strconv.Atoi(strings.TrimPrefix(string(raw), offsetTokenPrefix))
		if err != nil || perr != nil || !strings.HasPrefix(string(raw), offsetTokenPrefix) || off < 0 || off > n {
			e := errInvalid("$skiptoken", "The value '%s' of parameter '$skiptoken' is not valid.", token)
			return span{}, nil, &e
		}
		from = off
	}
	p := span{from, min(n, from+s.opts.PageSize)}
	if p.end == n {
		return p, nil, nil
	}
	q.Set("$skiptoken", base64.RawURLEncoding.EncodeToString([]byte(offsetTokenPrefix+strconv.Itoa(p.end))))
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	return p, to.Ptr(baseURL(r) + next.RequestURI()), nil
}
