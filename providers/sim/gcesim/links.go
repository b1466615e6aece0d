// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"context"
	"net/http"
	"strings"
)

// Resource URLs. GCE writes every selfLink and every reference to another
// resource as a full URL under https://www.googleapis.com/compute/v1/,
// whichever endpoint was called. Clients pointed at the emulator follow
// those links (gcloud parses them back into requests against the endpoint
// it was given, and refuses a URL of another), so the front writes them
// under the base the request came on: its scheme and Host, then
// /compute/v1/. A request whose Host is a googleapis.com name (the
// emulator reached as the real endpoint, through a proxy or a hosts
// entry), or that has no Host, gets GCE's own base.
//
// The world keeps references as paths relative to the base
// ("projects/p/global/networks/default"), so what one client made reads
// right through any other.

// apiBase is GCE's own base for resource URLs.
const apiBase = "https://www.googleapis.com/compute/v1/"

// apiPath is where the API's paths start under a host.
const apiPath = "/compute/v1/"

// links renders and reads the resource URLs of one request.
type links struct {
	// base prefixes every URL written; it ends in apiPath.
	base string
	// host is the request's Host, under which references may also be
	// given.
	host string
}

type linksKey struct{}

// withLinks records the request's links in its context, for the
// handlers and for the parts of a batch, which come with their own Host.
func withLinks(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), linksKey{}, linksFor(r)))
}

// linksOf returns the links withLinks recorded, or GCE's own.
func linksOf(r *http.Request) links {
	if l, ok := r.Context().Value(linksKey{}).(links); ok {
		return l
	}
	return links{base: apiBase}
}

func linksFor(r *http.Request) links {
	host := r.Host
	if host == "" || isGoogleHost(host) {
		return links{base: apiBase, host: host}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return links{base: scheme + "://" + host + apiPath, host: host}
}

// isGoogleHost reports whether a host (with or without its port) is one
// of Google's API front ends.
func isGoogleHost(host string) bool {
	name := strings.ToLower(host)
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "]") {
		name = name[:i]
	}
	return name == "googleapis.com" || strings.HasSuffix(name, ".googleapis.com")
}

// url is the full URL of a resource path.
func (l links) url(path string) string { return l.base + path }

// zone is a zone's URL.
func (l links) zone(project, zone string) string { return l.url(scope(project, zone)) }

// region is a region's URL.
func (l links) region(project, region string) string {
	return l.url(regionPath(project, region))
}

// instance is an instance's URL.
func (l links) instance(project, zone, name string) string {
	return l.zone(project, zone) + "/instances/" + name
}

// stored renders a reference the world keeps: a path, or a full URL as
// older states kept them.
func (l links) stored(ref string) string {
	if ref == "" {
		return ""
	}
	if rest, ok := l.relative(ref); ok {
		return l.url(rest)
	}
	return ref
}

// relative reads a reference given in a request down to what follows the
// base: a full URL under GCE's base, under any googleapis.com host or
// under the request's own host loses its scheme, host and /compute/v1/;
// anything without a scheme is returned as it is, for the caller to read
// as a partial URL. ok is false for a URL of another host or path, which
// GCE refuses as malformed.
func (l links) relative(value string) (rest string, ok bool) {
	scheme, after, found := strings.Cut(value, "://")
	if !found {
		return value, true
	}
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, path, _ := strings.Cut(after, "/")
	if !isGoogleHost(host) && !strings.EqualFold(host, l.host) {
		return "", false
	}
	rest, ok = strings.CutPrefix("/"+path, apiPath)
	return rest, ok
}

// ref is a reference to a zonal, regional or global resource, resolved to
// its parts.
type ref struct {
	project string
	// scope is "zones", "regions" or "global"; location is the zone or
	// region, empty for a global resource.
	scope, location string
	collection      string
	name            string
}

// path is the reference as the world keeps it and errors name it.
func (r ref) path() string {
	p := "projects/" + r.project + "/" + r.scope + "/"
	if r.location != "" {
		p += r.location + "/"
	}
	return p + r.collection + "/" + r.name
}

// parseRef reads a reference to a resource of def's scope and collection
// in the forms GCE accepts: a full URL, "projects/P/SCOPE/L/C/N",
// "SCOPE/L/C/N" (for a global resource "projects/P/global/C/N" and
// "global/C/N"), or the bare name N. def supplies the project and location
// that a partial form leaves out. ok is false for anything else.
func (l links) parseRef(value string, def ref) (ref, bool) {
	rest, ok := l.relative(value)
	if !ok || rest == "" {
		return def, false
	}
	seg := strings.Split(rest, "/")
	out := def
	if len(seg) == 1 {
		out.name = seg[0]
		return out, true
	}
	if seg[0] == "projects" && len(seg) > 2 {
		out.project, seg = seg[1], seg[2:]
	}
	switch {
	case def.scope == "global" && len(seg) == 3 && seg[0] == "global" && seg[1] == def.collection:
		out.name = seg[2]
	case def.scope != "global" && len(seg) == 4 && seg[0] == def.scope && seg[2] == def.collection:
		out.location, out.name = seg[1], seg[3]
	default:
		return def, false
	}
	global := def.scope == "global"
	return out, out.project != "" && out.name != "" && (out.location == "") == global
}
