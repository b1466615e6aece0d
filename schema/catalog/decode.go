// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A catalog's offers are nearly all of it (the snapshot's 5,322 are 97 %
// of its bytes), and encoding/json takes 80 ms to decode the snapshot by
// reflection, half the CPU of a `gpufleet plan`. decodeCatalog reads the
// catalog's object and its offers itself and hands the other fields, a few
// kilobytes, to encoding/json. It accepts and refuses what encoding/json
// does for a Catalog with unknown fields disallowed: keys matched
// regardless of case, null leaving a field as it is, strings with escapes
// or beyond ASCII decoded by encoding/json itself.
// TestDecodeCatalogAgreesWithEncodingJSON checks it against encoding/json
// on the snapshot and on thousands of mutations of a catalog.

// decodeCatalog decodes one catalog object, and nothing after it.
func decodeCatalog(data []byte) (*Catalog, error) {
	p := &jsonScanner{data: data}
	p.space()
	if p.i == len(data) {
		return nil, fmt.Errorf("unexpected end of JSON input")
	}
	var c Catalog
	if p.literal("null") {
		// encoding/json leaves a value alone for null, which Read has
		// always taken as an empty catalog.
		p.space()
		if p.i != len(data) {
			return nil, fmt.Errorf("unexpected data after the catalog")
		}
		return &c, nil
	}
	if !p.take('{') {
		return nil, p.notA("catalog", "object")
	}
	others := map[string]any{
		"source": &c.Source, "fetchedAt": &c.FetchedAt, "sources": &c.Sources, "regions": &c.Regions,
		"egress": &c.Egress, "quotas": &c.Quotas, "quotaUses": &c.QuotaUses,
	}
	err := p.members("in the catalog", func(key string) error {
		switch name := fieldNamed(key, "offers", "source", "fetchedAt", "sources", "regions", "egress", "quotas", "quotaUses"); name {
		case "":
			return fmt.Errorf("json: unknown field %q", key)
		case "offers":
			return p.offers(&c.Offers)
		default:
			start := p.i
			if err := p.skip(); err != nil {
				return err
			}
			dec := json.NewDecoder(bytes.NewReader(data[start:p.i]))
			dec.DisallowUnknownFields()
			return dec.Decode(others[name])
		}
	})
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(data) {
		return nil, fmt.Errorf("unexpected data after the catalog")
	}
	return &c, nil
}

// fieldNamed is the field of names that key names, exactly or else
// regardless of case, as encoding/json matches them; "" if none.
func fieldNamed(key string, names ...string) string {
	for _, n := range names {
		if n == key {
			return n
		}
	}
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
	}
	return ""
}

// jsonScanner reads JSON from data, from i on, refusing what is not JSON.
type jsonScanner struct {
	data []byte
	i    int
	// seen holds the plain strings read so far: offers repeat their
	// clouds, regions, zones, types and sources thousands of times, and
	// share one copy of each.
	seen map[string]string
}

func (p *jsonScanner) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// take consumes c if it comes next.
func (p *jsonScanner) take(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// literal consumes the literal s (null, true, false) if it comes next.
func (p *jsonScanner) literal(s string) bool {
	if len(p.data)-p.i >= len(s) && string(p.data[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *jsonScanner) syntax(where string) error {
	if p.i >= len(p.data) {
		return fmt.Errorf("unexpected end of JSON input %s", where)
	}
	return fmt.Errorf("invalid character %q at offset %d %s", p.data[p.i], p.i, where)
}

// kind names the JSON value that comes next, as encoding/json's errors do.
func (p *jsonScanner) kind() string {
	if p.i >= len(p.data) {
		return "nothing"
	}
	switch c := p.data[p.i]; {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	default:
		return fmt.Sprintf("%q", c)
	}
}

// notA says the value that comes next is not the JSON kind what needs.
func (p *jsonScanner) notA(what, kind string) error {
	return fmt.Errorf("json: cannot unmarshal %s into %s, which is a JSON %s", p.kind(), what, kind)
}

// members reads the members of an object whose '{' is read, calling each
// with the scanner at a member's value; each must consume it. where says
// where a bad separator was, for errors.
func (p *jsonScanner) members(where string, each func(key string) error) error {
	p.space()
	if p.take('}') {
		return nil
	}
	for {
		key, err := p.str()
		if err != nil {
			return err
		}
		p.space()
		if !p.take(':') {
			return p.syntax("after a key")
		}
		p.space()
		if err := each(key); err != nil {
			return err
		}
		p.space()
		if p.take('}') {
			return nil
		}
		if !p.take(',') {
			return p.syntax(where)
		}
		p.space()
	}
}

// elements reads the elements of an array whose '[' is read, calling each
// with the scanner at an element; each must consume it.
func (p *jsonScanner) elements(where string, each func() error) error {
	p.space()
	if p.take(']') {
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		p.space()
		if p.take(']') {
			return nil
		}
		if !p.take(',') {
			return p.syntax(where)
		}
		p.space()
	}
}

// maxDepth is how deeply values may nest, as in encoding/json, which
// refuses deeper ones.
const maxDepth = 10000

// skip consumes one value of any kind.
func (p *jsonScanner) skip() error { return p.skipAt(1) }

// skipAt is skip for a value nested depth deep.
func (p *jsonScanner) skipAt(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("exceeded max depth")
	}
	switch p.kind() {
	case "string":
		_, err := p.str()
		return err
	case "number":
		if _, ok := p.number(); !ok {
			return p.syntax("in a number")
		}
		return nil
	case "null", "bool":
		if p.literal("null") || p.literal("true") || p.literal("false") {
			return nil
		}
		return p.syntax("in a literal")
	case "object":
		p.i++
		return p.members("between values", func(string) error { return p.skipAt(depth + 1) })
	case "array":
		p.i++
		return p.elements("between values", func() error { return p.skipAt(depth + 1) })
	}
	return p.syntax("where a value belongs")
}

// str reads a string. One with escapes, control characters or bytes
// beyond ASCII goes to encoding/json, which knows them all; the
// snapshot's strings have none.
func (p *jsonScanner) str() (string, error) {
	if !p.take('"') {
		return "", p.syntax("where a string belongs")
	}
	start := p.i
	plain := true
	for p.i < len(p.data) && p.data[p.i] != '"' {
		switch c := p.data[p.i]; {
		case c == '\\':
			plain = false
			p.i++ // the escaped character, whatever it is, does not end the string
		case c < 0x20 || c >= utf8.RuneSelf:
			plain = false
		}
		p.i++
	}
	if p.i >= len(p.data) {
		return "", p.syntax("in a string")
	}
	p.i++
	if plain {
		raw := p.data[start : p.i-1]
		if v, ok := p.seen[string(raw)]; ok {
			return v, nil
		}
		v := string(raw)
		if p.seen == nil {
			p.seen = map[string]string{}
		}
		p.seen[v] = v
		return v, nil
	}
	var s string
	if err := json.Unmarshal(p.data[start-1:p.i], &s); err != nil {
		return "", err
	}
	return s, nil
}

// number consumes a JSON number and returns its text, or false where
// JSON's grammar has none.
func (p *jsonScanner) number() ([]byte, bool) {
	start := p.i
	p.take('-')
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if !p.take('0') && digits() == 0 {
		return nil, false
	}
	if p.take('.') && digits() == 0 {
		return nil, false
	}
	if p.take('e') || p.take('E') {
		if !p.take('+') {
			p.take('-')
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return p.data[start:p.i], true
}

// offers reads the catalog's list of offers into l. As encoding/json
// does, the list replaces what l held, but an offer decodes over the one
// at its place in l, if any: a second "offers" key, which nothing writes,
// decodes as encoding/json would decode it.
func (p *jsonScanner) offers(l *[]Offer) error {
	if p.literal("null") {
		*l = nil
		return nil
	}
	if !p.take('[') {
		return p.notA("the catalog's offers", "array")
	}
	old := *l
	out := make([]Offer, 0, max(len(old), (len(p.data)-p.i)/250)) // the snapshot's offers take about 230 bytes each
	err := p.elements("after an offer", func() error {
		o := Offer{}
		if len(out) < len(old) {
			o = old[len(out)]
		}
		if err := p.offer(&o); err != nil {
			return fmt.Errorf("offers[%d]: %w", len(out), err)
		}
		out = append(out, o)
		return nil
	})
	if err != nil {
		return err
	}
	*l = out
	return nil
}

// offer reads one offer object into o.
func (p *jsonScanner) offer(o *Offer) error {
	if p.literal("null") {
		return nil
	}
	if !p.take('{') {
		return p.notA("an offer", "object")
	}
	return p.members("in an offer", func(key string) error { return p.offerField(o, key) })
}

// offerField reads the value of an offer's field named key into o.
func (p *jsonScanner) offerField(o *Offer, key string) error {
	name := fieldNamed(key, "cloud", "region", "zone", "instanceType", "market", "gpuModel", "gpus", "vcpus", "memoryGiB", "priceMicros", "source", "derived")
	if name == "" {
		return fmt.Errorf("json: unknown field %q", key)
	}
	if p.literal("null") {
		return nil
	}
	var err error
	switch name {
	case "cloud":
		err = p.stringInto(&o.Cloud, name)
	case "region":
		err = p.stringInto(&o.Region, name)
	case "zone":
		err = p.stringInto(&o.Zone, name)
	case "instanceType":
		err = p.stringInto(&o.InstanceType, name)
	case "market":
		var m string
		err = p.stringInto(&m, name)
		o.Market = Market(m)
	case "gpuModel":
		err = p.stringInto(&o.GPUModel, name)
	case "source":
		err = p.stringInto(&o.Source, name)
	case "gpus":
		var n int64
		n, err = p.integer(name)
		o.GPUs = int(n)
	case "vcpus":
		var n int64
		n, err = p.integer(name)
		o.VCPUs = int(n)
	case "priceMicros":
		o.PriceMicros, err = p.integer(name)
	case "memoryGiB":
		o.MemoryGiB, err = p.float(name)
	case "derived":
		switch {
		case p.literal("true"):
			o.Derived = true
		case p.literal("false"):
			o.Derived = false
		default:
			err = p.notA("offer field "+name, "bool")
		}
	}
	return err
}

func (p *jsonScanner) stringInto(s *string, name string) error {
	if p.kind() != "string" {
		return p.notA("offer field "+name, "string")
	}
	v, err := p.str()
	*s = v
	return err
}

func (p *jsonScanner) integer(name string) (int64, error) {
	if p.kind() != "number" {
		return 0, p.notA("offer field "+name, "number")
	}
	text, ok := p.number()
	if !ok {
		return 0, p.syntax("in a number")
	}
	if n, ok := smallInteger(text); ok {
		return n, nil
	}
	n, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("json: cannot unmarshal number %s into offer field %s, an integer", text, name)
	}
	return n, nil
}

func (p *jsonScanner) float(name string) (float64, error) {
	if p.kind() != "number" {
		return 0, p.notA("offer field "+name, "number")
	}
	text, ok := p.number()
	if !ok {
		return 0, p.syntax("in a number")
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return 0, fmt.Errorf("json: cannot unmarshal number %s into offer field %s: out of range", text, name)
	}
	return f, nil
}

// smallInteger is the value of a JSON number of at most 18 digits with no
// fraction or exponent, which cannot overflow; false for any other.
func smallInteger(text []byte) (int64, bool) {
	digits, negative := text, false
	if len(digits) > 0 && digits[0] == '-' {
		digits, negative = digits[1:], true
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	n := int64(0)
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if negative {
		n = -n
	}
	return n, true
}
