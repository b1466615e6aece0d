// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// Every route of the front, with every variable segment a value of each
// kind (one that exists, one that does not, one that is not a name), is
// sent each of the bodies and queries no client would send. Each answer
// is GCE's: a 4xx with the error envelope, its code the status, one error
// with a reason in domain global; none is a 5xx, and none reaches the
// panic recovery (the fixture checks).
func TestEveryRouteRefusesBadInputInGCEShape(t *testing.T) {
	f := newFixture(t, sim.Config{}, Options{})
	f.create(t, vm{name: "present"})
	segments := []string{"us-central1-a", "us-central1", "present", "nowhere", "Bad%20Name", strings.Repeat("x", 300), "%00"}
	bodies := map[string]string{
		"empty":        "",
		"truncated":    `{"name":`,
		"array":        `[]`,
		"null":         `null`,
		"wrong type":   `{"name":7,"count":"two"}`,
		"unknown":      `{"flavour":"vanilla"}`,
		"not UTF-8":    "{\"name\":\"\xff\xfe\"}",
		"deep nesting": strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	}
	queries := []string{"", "?maxResults=ten", "?filter=(((", "?pageToken=%%%", "?orderBy=zone", "?requestId=nope", "?returnPartialSuccess=maybe"}
	requests := 0
	tooLarge := `{"description":"` + strings.Repeat("x", maxBody+1) + `"}`
	for _, rt := range routes {
		for i, path := range expand(rt.pattern, segments) {
			url := f.url + apiPath + "projects/gpufleet-test"
			if path != "" {
				url += "/" + path
			}
			// Reads get the bad queries; writes the bad bodies, with and
			// without a bad requestId.
			cases, qs := map[string]string{"": ""}, queries
			if rt.method == http.MethodPost || rt.method == http.MethodPut {
				cases, qs = bodies, []string{"", "?requestId=nope"}
				if i == 0 {
					// Once a route: it is the size that is refused.
					cases = maps.Clone(bodies)
					cases["too large"] = tooLarge
				}
			}
			for name, body := range cases {
				for _, q := range qs {
					requests++
					req, err := http.NewRequest(rt.method, url+q, strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer sweep")
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatalf("%s %s%s (%s): %v", rt.method, path, q, name, err)
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode < 400 {
						continue
					}
					var env errorEnvelope
					err = json.Unmarshal(raw, &env)
					switch {
					case resp.StatusCode >= 500:
						t.Errorf("%s %s%s (%s): %d %s", rt.method, path, q, name, resp.StatusCode, raw)
					case err != nil || env.Error.Code != resp.StatusCode || len(env.Error.Errors) != 1 || env.Error.Errors[0].Reason == "" || env.Error.Errors[0].Domain == "":
						t.Errorf("%s %s%s (%s): %d, not GCE's error envelope: %.300s", rt.method, path, q, name, resp.StatusCode, raw)
					case !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
						t.Errorf("%s %s%s (%s): content type %q", rt.method, path, q, name, resp.Header.Get("Content-Type"))
					}
				}
			}
		}
	}
	t.Logf("%d requests over %d routes", requests, len(routes))
}

// expand is every path a pattern names with its "*" segments taken from
// values, each alone varied while the others hold the first value.
func expand(pattern string, values []string) []string {
	if pattern == "" {
		return []string{""}
	}
	parts := strings.Split(pattern, "/")
	var stars []int
	for i, p := range parts {
		if p == "*" {
			stars = append(stars, i)
		}
	}
	fill := func(vary int, value string) string {
		out := make([]string, len(parts))
		for i, p := range parts {
			out[i] = p
			if p == "*" {
				out[i] = values[0]
				if i == vary {
					out[i] = value
				}
			}
		}
		return strings.Join(out, "/")
	}
	if len(stars) == 0 {
		return []string{pattern}
	}
	var paths []string
	for _, i := range stars {
		for _, v := range values {
			paths = append(paths, fill(i, v))
		}
	}
	return paths
}
