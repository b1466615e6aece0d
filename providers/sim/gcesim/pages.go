// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"cmp"
	"net/http"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The catalog collections (zones, regions, machine, accelerator and disk
// types, images, networks, subnetworks) page alike: in order of scope, then name,
// resuming after the last item of the previous page, filtered on the name
// alone, which is the only field their lists are filtered on here.

// keyed is an item of a collection with its place in the list order:
// its scope (a zone or region, "global" for global items: a page token
// must name one) and its name.
type keyed[T any] struct {
	scope, name string
	item        T
}

// keyedBy keys a collection's items with the scope and name key gives
// each.
func keyedBy[T any](items []T, key func(T) (scope, name string)) []keyed[T] {
	out := make([]keyed[T], len(items))
	for i, it := range items {
		scope, name := key(it)
		out[i] = keyed[T]{scope: scope, name: name, item: it}
	}
	return out
}

// parseNameQuery reads a list's parameters and refuses a filter on any
// field but the name.
func parseNameQuery(r *http.Request, collection string) (listQuery, *apiError) {
	q, err := parseListQuery(r, collection)
	if err == nil && !q.filter.only("name") {
		err = invalidField("filter", r.URL.Query().Get("filter"), "Invalid list filter expression.")
	}
	return newestFirstQuery(q, err)
}

// admitted orders a list's refusals as GCE does: its call's (a fault, a
// denial, a missing zone or region) before its query's, which was read
// first.
func admitted(call error, query *apiError) error {
	if call != nil {
		return call
	}
	if query != nil {
		return query
	}
	return nil
}

// page returns the items of a page, in list order, and the token of the
// next page, or nil when this is the last.
func page[T any](r *http.Request, collection string, q listQuery, items []keyed[T]) ([]keyed[T], *string) {
	return pageBy(r, collection, q, items, nil)
}

// pageBy is page for a collection filtered on other fields than the name:
// value gives an item's value of a condition's field and whether it has
// the field.
func pageBy[T any](r *http.Request, collection string, q listQuery, items []keyed[T], value func(T, condition) (string, bool)) ([]keyed[T], *string) {
	// Newest first is the list order backwards: only lists ordered by
	// when their items began take it (see newestFirstQuery).
	order := 1
	if q.newestFirst {
		order = -1
	}
	slices.SortFunc(items, func(a, b keyed[T]) int {
		return order * cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(a.name, b.name))
	})
	var out []keyed[T]
	for _, it := range items {
		if q.after != nil && order*cmp.Or(cmp.Compare(it.scope, q.after.Zone), cmp.Compare(it.name, q.after.Name)) <= 0 {
			continue
		}
		if !q.filter.match(func(c condition) (string, bool) {
			if value == nil {
				return it.name, true
			}
			return value(it.item, c)
		}) {
			continue
		}
		if len(out) == q.limit {
			last := out[len(out)-1]
			// The cursor's zone holds any scope.
			return out, proto.String(encodeCursor(cursor{Zone: last.scope, Name: last.name, Query: queryHash(r, collection)}))
		}
		out = append(out, it)
	}
	return out, nil
}

// renderAll renders the items of a page, in order.
func renderAll[T, R any](items []keyed[T], render func(keyed[T]) R) []R {
	var out []R
	for _, it := range items {
		out = append(out, render(it))
	}
	return out
}

// aggregate is the items of an aggregated list's page: each scope's
// items rendered, keyed prefix+scope, and every scope of scopes without
// any on the page given a NO_RESULTS_ON_PAGE warning instead. scoped
// makes a scope's entry of the one or the other.
func aggregate[T, R, S any](items []keyed[T], prefix string, scopes []string, render func(keyed[T]) R, scoped func([]R, *computepb.Warning) S) map[string]S {
	byScope := map[string][]R{}
	for _, it := range items {
		key := prefix + it.scope
		byScope[key] = append(byScope[key], render(it))
	}
	out := make(map[string]S, len(scopes))
	for key, rendered := range byScope {
		out[key] = scoped(rendered, nil)
	}
	for _, sc := range scopes {
		if key := prefix + sc; byScope[key] == nil {
			out[key] = scoped(nil, noResults(key))
		}
	}
	return out
}

// writeList writes a list or aggregatedList response, which has its kind
// and items: every such response of GCE's also has its collection as its
// id and, as a URL, its selfLink, and the next page's token, if any.
func writeList(w http.ResponseWriter, l links, collection string, next *string, resp proto.Message) error {
	m := resp.ProtoReflect()
	fields := m.Descriptor().Fields()
	m.Set(fields.ByName("id"), protoreflect.ValueOfString(collection))
	m.Set(fields.ByName("self_link"), protoreflect.ValueOfString(l.url(collection)))
	if next != nil {
		m.Set(fields.ByName("next_page_token"), protoreflect.ValueOfString(*next))
	}
	return writeProto(w, resp)
}
