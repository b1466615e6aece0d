// SPDX-License-Identifier: Apache-2.0

package outbound

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// AllowHTTPEnv names the variable that lets gpufleet call plain http
// endpoints beyond loopback, as GPUFLEET_GIT_ALLOW_HTTP does for Git.
const AllowHTTPEnv = "GPUFLEET_ALLOW_HTTP"

// AllowHTTP reports whether the environment read through getenv allows
// plain http beyond loopback.
func AllowHTTP(getenv func(string) string) bool { return getenv(AllowHTTPEnv) == "true" }

// What CheckURL refuses. Each reads after the thing checked ("the GitLab
// API URL %q " + err): callers name it, for only they know whether the URL
// itself may be shown.
var (
	ErrNotHTTP   = errors.New("is not an http(s) URL")
	ErrPlainHTTP = errors.New("is plain http to a host other than loopback: use https, or set " + AllowHTTPEnv + "=true on a network you trust")
)

// CheckURL parses an endpoint's URL and refuses one that is not http(s)
// with a host, or that is plain http beyond loopback unless allowHTTP: a
// credential or a signed message would cross the network in clear text.
// Loopback stays open for the emulator and for local testing, where
// nothing leaves the machine.
func CheckURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, ErrNotHTTP
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u, nil
	case "http":
		if allowHTTP || Loopback(u.Hostname()) {
			return u, nil
		}
		return nil, ErrPlainHTTP
	}
	return nil, ErrNotHTTP
}

// Loopback reports whether a host name (a URL's Hostname) is this machine:
// localhost, or an address of 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SameOrigin reports whether two URLs have the same scheme, host and port,
// the default port of the scheme counting as given.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// origin is a URL's scheme, host and port, as an error names where a
// request was going: never its path or query, which may hold a secret.
func origin(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + u.Host
}
