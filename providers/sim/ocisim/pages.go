// SPDX-License-Identifier: Apache-2.0

package ocisim

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// OCI pages its lists: a request's limit caps a page, and an answer with
// more to come carries an opc-next-page header, which the next request
// sends back as its page. A page token is opaque to callers; here it is
// the sort key of the last item served, so that a page begins where the
// last ended even when items come or go in between.

// defaultLimit is a page's size when the request gives none. OCI's is not
// documented (its examples page by 50); a small one makes callers page.
const defaultLimit = 50

// maxLimit is the largest page a request may ask for.
const maxLimit = 1000

// readLimit reads a request's limit.
func readLimit(q url.Values) (int, error) {
	raw := q.Get("limit")
	if raw == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxLimit {
		return 0, errInvalid("limit", "the limit must be a whole number from 1 to "+strconv.Itoa(maxLimit)+", not "+strconv.Quote(raw)+".")
	}
	return n, nil
}

// paginate serves one page of items, which are sorted by order on their
// keys: the items after the key the page token holds, if any, at most
// limit of them, and the token of the next page ("" when none follow).
func paginate[T, K any](q url.Values, items []T, key func(T) K, order func(a, b K) int) ([]T, string, error) {
	limit, err := readLimit(q)
	if err != nil {
		return nil, "", err
	}
	start := 0
	if token := q.Get("page"); token != "" {
		var after K
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || json.Unmarshal(raw, &after) != nil {
			return nil, "", errInvalid("page", "the page token is not one this API gave.")
		}
		for start < len(items) && order(key(items[start]), after) <= 0 {
			start++
		}
	}
	end := min(start+limit, len(items))
	next := ""
	if end < len(items) {
		raw, err := json.Marshal(key(items[end-1]))
		if err != nil {
			return nil, "", err
		}
		next = base64.RawURLEncoding.EncodeToString(raw)
	}
	return items[start:end], next, nil
}

// writeList answers a page of a list, with the token of the next page.
func writeList[T any](w http.ResponseWriter, items []T, next string) error {
	if next != "" {
		w.Header().Set("opc-next-page", next)
	}
	if items == nil {
		items = []T{}
	}
	return writeJSON(w, http.StatusOK, items)
}
