// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// sweepRoute is one path template the front serves, with the methods it
// takes and the api-version its type is served at. Placeholders are
// {sub}, {rg}, {vm}, {ppg}, {vnet}, {subnet}, {nic}, {loc} and {op}.
type sweepRoute struct {
	path    string
	methods []string
	version string
}

// sweepRoutes are the routes of server.go's switches, every one of them.
var sweepRoutes = []sweepRoute{
	{"/subscriptions/{sub}", []string{"GET"}, "2022-12-01"},
	{"/subscriptions/{sub}/locations", []string{"GET"}, "2022-12-01"},
	{"/subscriptions/{sub}/resourceGroups", []string{"GET"}, "2022-09-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}", []string{"PUT", "GET", "HEAD", "DELETE"}, "2022-09-01"},
	{"/subscriptions/{sub}/operationresults/{op}", []string{"GET"}, "2022-09-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}", []string{"PUT", "PATCH", "GET", "DELETE"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}/instanceView", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}/deallocate", []string{"POST"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}/powerOff", []string{"POST"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}/start", []string{"POST"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines/{vm}/restart", []string{"POST"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/proximityPlacementGroups", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Compute/proximityPlacementGroups/{ppg}", []string{"PUT", "GET", "DELETE"}, APIVersion},
	{"/subscriptions/{sub}/providers/Microsoft.Compute/virtualMachines", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/providers/Microsoft.Compute/locations/{loc}/operations/{op}", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/providers/Microsoft.Compute/locations/{loc}/usages", []string{"GET"}, APIVersion},
	{"/subscriptions/{sub}/providers/Microsoft.Compute/skus", []string{"GET"}, SKUsAPIVersion},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks", []string{"GET"}, "2022-07-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{vnet}", []string{"PUT", "GET", "DELETE"}, "2022-07-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets", []string{"GET"}, "2022-07-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{subnet}", []string{"PUT", "GET", "DELETE"}, "2022-07-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/networkInterfaces", []string{"GET"}, "2022-07-01"},
	{"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/networkInterfaces/{nic}", []string{"PUT", "GET", "DELETE"}, "2022-07-01"},
	{"/subscriptions/{sub}/providers/Microsoft.Network/locations/{loc}/operations/{op}", []string{"GET"}, "2022-07-01"},
	{"/subscriptions/{sub}/providers/Microsoft.Network/locations/{loc}/operationResults/{op}", []string{"GET"}, "2022-07-01"},
}

// sweepNames are what the placeholders stand for when they are not the
// segment under test: the fixture's resources and a VM the sweep creates,
// so that requests reach the handlers' deeper checks.
var sweepNames = map[string]string{
	"{sub}": testSub, "{rg}": testRG, "{vm}": "swept", "{ppg}": "swept-ppg", "{vnet}": "gpu-eastus",
	"{subnet}": fixtureSubnet, "{nic}": "swept-nic", "{loc}": "eastus", "{op}": "00000000-0000-4000-8000-000000000000",
}

// sweepPath fills a template's placeholders, bad for the one under test.
func sweepPath(template, placeholder, bad string) string {
	path := template
	for p, name := range sweepNames {
		if p == placeholder {
			name = bad
		}
		path = strings.ReplaceAll(path, p, name)
	}
	return path
}

// largeBody is a JSON string past ARM's limit on request content.
var largeBody = []byte(`"` + strings.Repeat("a", 5<<20) + `"`)

// sweepAnswer is what the sweep reads of an answer.
type sweepAnswer struct {
	status      int
	code        string
	contentType string
	headerCode  string
	body        []byte
}

func (f *front) sweepSend(t *testing.T, method, path string, body []byte) sweepAnswer {
	t.Helper()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, reader)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	req.Header.Set("Authorization", testToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := sweepAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), headerCode: resp.Header.Get("x-ms-error-code"), body: data}
	var e errorBody
	if json.Unmarshal(data, &e) == nil {
		a.code = e.Error.Code
	}
	return a
}

// armShaped reports what keeps an error answer from ARM's shape, "" when
// nothing does: a status under 500, the body {"error":{"code","message"}}
// with the code in x-ms-error-code, as JSON.
func (a sweepAnswer) armShaped(method string) string {
	switch {
	case a.status >= 500:
		return "a server error"
	case a.status < 400:
		return ""
	case a.headerCode == "":
		return "no x-ms-error-code"
	case method == http.MethodHead:
		return ""
	case !strings.HasPrefix(a.contentType, "application/json"):
		return "content type " + a.contentType
	}
	var e struct {
		Error *struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(a.body, &e) != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
		return "a body not {\"error\":{\"code\",\"message\"}}"
	}
	if e.Error.Code != a.headerCode {
		return "x-ms-error-code " + a.headerCode + " and body code " + e.Error.Code
	}
	return ""
}

func (a sweepAnswer) String() string {
	body := a.body
	if len(body) > 300 {
		body = body[:300]
	}
	return http.StatusText(a.status) + " " + string(body)
}

// Every route the front serves, with every method it takes, answers bad
// request content, bad api-versions and bad path segments in ARM's shape
// and with ARM's status and code: never a server error, never the
// last-resort recover (newFront checks).
func TestSweepBadInput(t *testing.T) {
	f := newFront(t, frontConfig{})
	f.mustCreate(t, "swept", vmRequest("eastus", t4, inZone("1")))

	// Content no resource reads; a numeric location is JSON of the
	// wrong type, which a PATCH (no location) and a subnet (none either)
	// need not read as such.
	bodies := []struct {
		name      string
		body      []byte
		wellTyped bool
	}{
		{"empty", []byte(""), false},
		{"unterminated", []byte("{"), false},
		{"an array", []byte("[]"), false},
		{"a numeric location", []byte(`{"location":1}`), true},
		{"null", []byte("null"), false},
		{"invalid UTF-8", []byte("{\"location\":\"east\xff\xfeus\"}"), false},
		{"invalid UTF-8 alone", []byte("\xff\xfe"), false},
	}
	takesBody := func(method string) bool { return method == http.MethodPut || method == http.MethodPatch }
	// Deletes go last, the deepest first, so that what the other requests
	// name is there for them; the fixture's group goes at the very end.
	type sweepCase struct {
		route  sweepRoute
		method string
	}
	var cases, deletes []sweepCase
	for _, route := range sweepRoutes {
		for _, method := range route.methods {
			if method == http.MethodDelete {
				deletes = append(deletes, sweepCase{route, method})
			} else {
				cases = append(cases, sweepCase{route, method})
			}
		}
	}
	slices.SortStableFunc(deletes, func(a, b sweepCase) int { return len(b.route.path) - len(a.route.path) })
	for _, c := range append(cases, deletes...) {
		route, method := c.route, c.method
		good := sweepPath(route.path, "", "") + "?api-version=" + route.version
		t.Run(method+" "+route.path, func(t *testing.T) {
			for _, b := range bodies {
				a := f.sweepSend(t, method, good, b.body)
				if why := a.armShaped(method); why != "" {
					t.Errorf("body %s: %s: %v", b.name, why, a)
				}
				switch {
				case !takesBody(method):
				case !b.wellTyped && (a.status != http.StatusBadRequest || a.code != "InvalidRequestContent"):
					t.Errorf("body %s: %v, want 400 InvalidRequestContent", b.name, a)
				case b.wellTyped && method == http.MethodPut && a.status != http.StatusBadRequest:
					t.Errorf("body %s: %v, want 400", b.name, a)
				}
			}
			if a := f.sweepSend(t, method, good, largeBody); a.status != http.StatusRequestEntityTooLarge || a.armShaped(method) != "" {
				t.Errorf("a 5 MiB body: %v, want 413 in ARM's shape", a)
			}

			var body []byte
			if takesBody(method) {
				body = []byte(`{"location":"eastus"}`)
			}
			path := sweepPath(route.path, "", "")
			versions := []struct {
				query string
				codes []string
			}{
				{"", []string{"MissingApiVersionParameter"}},
				{"?api-version=", []string{"MissingApiVersionParameter"}},
				{"?api-version=2099-01-01", []string{"NoRegisteredProviderFound", "InvalidResourceType", "InvalidApiVersionParameter"}},
				{"?api-version=abc", []string{"InvalidApiVersionParameter"}},
			}
			for _, v := range versions {
				a := f.sweepSend(t, method, path+v.query, body)
				if why := a.armShaped(method); why != "" || a.status < 400 || !slices.Contains(v.codes, cmpCode(a, method)) {
					t.Errorf("api-version %q: %v (%s), want one of %v", v.query, a, why, v.codes)
				}
			}

			for _, p := range slices.Sorted(maps.Keys(sweepNames)) {
				if !strings.Contains(route.path, p) {
					continue
				}
				for _, bad := range []string{"", strings.Repeat("n", 300), "%00", "a%00b"} {
					a := f.sweepSend(t, method, sweepPath(route.path, p, bad)+"?api-version="+route.version, body)
					if why := a.armShaped(method); why != "" {
						t.Errorf("%s %q: %s: %v", p, bad, why, a)
					}
					// An empty last segment names the collection.
					parent := bad == "" && strings.HasSuffix(route.path, p)
					if a.status < 400 && !parent && !(method == http.MethodDelete && a.status == http.StatusNoContent) {
						t.Errorf("%s %q: %v, want a refusal", p, bad, a)
					}
				}
			}
		})
	}
}

// cmpCode is an answer's code: a HEAD's is in its header alone.
func cmpCode(a sweepAnswer, method string) string {
	if method == http.MethodHead {
		return a.headerCode
	}
	return a.code
}

// What the sweep found, each answered with ARM's status and code.
func TestSweepFindings(t *testing.T) {
	f := newFront(t, frontConfig{})
	q := "?api-version=" + APIVersion
	nq := "?api-version=2022-07-01"
	network := "/subscriptions/" + testSub + "/resourceGroups/" + testRG + "/providers/Microsoft.Network/"
	tests := []struct {
		name, method, path string
		body               []byte
		status             int
		code, text         string
	}{
		{"a subscription id that is no GUID", "GET", "/subscriptions/a%00b/providers/Microsoft.Compute/skus?api-version=" + SKUsAPIVersion, nil,
			400, "InvalidSubscriptionId", "The provided subscription identifier 'a\x00b' is malformed or invalid."},
		{"a group name with a NUL", "DELETE", "/subscriptions/" + testSub + "/resourceGroups/a%00b?api-version=2022-09-01", nil,
			400, "InvalidResourceGroup", "has these invalid characters: '\x00'"},
		{"a group name of 300 characters", "GET", "/subscriptions/" + testSub + "/resourceGroups/" + strings.Repeat("n", 300) + "/providers/Microsoft.Compute/virtualMachines" + q, nil,
			400, "InvalidResourceGroup", "the name can be at most 90"},
		{"a network name of 300 characters", "PUT", network + "virtualNetworks/" + strings.Repeat("n", 300) + nq, []byte(`{"location":"eastus"}`),
			400, "InvalidResourceName", "The name can be up to 80 characters long."},
		{"an interface name with a NUL", "PUT", network + "networkInterfaces/a%00b" + nq, []byte(`{"location":"eastus"}`),
			400, "InvalidResourceName", ""},
		{"a null body", "PUT", vmPath + "n" + q, []byte("null"), 400, "InvalidRequestContent", "not a JSON object"},
		{"an array body", "PUT", "/subscriptions/" + testSub + "/resourceGroups/arr?api-version=2022-09-01", []byte("[]"), 400, "InvalidRequestContent", "not a JSON object"},
		{"invalid UTF-8", "PUT", network + "virtualNetworks/u" + nq, []byte("{\"location\":\"east\xffus\"}"), 400, "InvalidRequestContent", "not valid UTF-8"},
		{"a 5 MiB body on a read", "GET", vmPath[:len(vmPath)-1] + q, largeBody, 413, "RequestContentTooLarge", "maximum size of 4 MB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := f.sweepSend(t, tt.method, tt.path, tt.body)
			var e errorBody
			_ = json.Unmarshal(a.body, &e)
			if a.status != tt.status || a.code != tt.code || a.headerCode != tt.code || !strings.Contains(e.Error.Message, tt.text) {
				t.Errorf("%v, want %d %s with %q", a, tt.status, tt.code, tt.text)
			}
		})
	}
}
