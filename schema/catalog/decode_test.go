// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// byReflection is how Read decoded catalogs before decodeCatalog, and
// the reference it is held to: encoding/json, unknown fields refused,
// nothing after the catalog.
func byReflection(data []byte) (*Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the catalog")
	}
	return &c, nil
}

// agree fails unless decodeCatalog and encoding/json both refuse data or
// both decode it to the same catalog.
func agree(t *testing.T, data []byte) {
	t.Helper()
	got, err := decodeCatalog(data)
	want, wantErr := byReflection(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("on %q: decodeCatalog says %v, encoding/json %v", data, err, wantErr)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("on %q: decodeCatalog gives\n%+v\nencoding/json\n%+v", data, got, want)
	}
}

// seedCatalogs are catalogs in the shapes JSON allows and Write does not
// produce: escapes, text beyond ASCII, keys in other cases, nulls, numbers
// in every form, repeated keys, empty lists.
var seedCatalogs = []string{
	`{"source": "x", "fetchedAt": "2026-10-01T12:00:00Z", "offers": [{"cloud": "aws", "region": "us-east-1", "instanceType": "p5.48xlarge", "market": "spot", "gpuModel": "H100", "gpus": 8, "vcpus": 192, "memoryGiB": 2048, "priceMicros": 98320000, "source": "public-aws", "derived": true}]}`,
	`{"offers": [{"cloud": "a\"b\\c\u00e9\n", "ZONE": "z", "GpuModel": "é", "memoryGiB": 1.5e3, "gpus": -0, "derived": false}, null, {}], "regions": [{"cloud": "gcp", "name": "r", "zones": ["r-a"]}]}`,
	`{"offers": null, "egress": [{"cloud": "aws", "interRegionMicrosPerGB": 20000}], "quotas": null, "source": null}`,
	`{"offers": [{"gpus": 1}], "offers": [{"vcpus": 2}], "regions": [{"cloud": "a"}], "regions": [{"name": "b"}]}`,
	`{"offers": [], "sources": [{"id": "s", "what": "w", "date": "2026-01-01T00:00:00Z"}], "quotaUses": [{"cloud": "aws", "per": 4}]}`,
	` null `,
	`{}`,
	"{\"offers\":[{\"priceMicros\":12,\"memoryGiB\":0.25,\"market\":\"on-demand\"}]}\n",
}

func TestDecodeCatalogAgreesWithEncodingJSON(t *testing.T) {
	t.Run("snapshot", func(t *testing.T) { agree(t, snapshotJSON) })
	var small bytes.Buffer
	if err := smallCatalog().Write(&small); err != nil {
		t.Fatal(err)
	}
	// Nested as deep as encoding/json allows, and far deeper: refused,
	// without a stack as deep.
	for _, depth := range []int{10000, 1_000_000} {
		agree(t, []byte(`{"regions": `+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}`))
	}
	seeds := append([]string{small.String()}, seedCatalogs...)
	for _, s := range seeds {
		agree(t, []byte(s))
	}
	// Mutations of the seeds: bytes deleted, inserted, replaced and spans
	// repeated, with characters JSON gives meaning to.
	const alphabet = "{}[]:,\" \\\n-+.0123456789eEtrufalsn\u00e9xgpusGPUS"
	r := rand.New(rand.NewPCG(2026, 12))
	mutations := 20000
	if testing.Short() {
		mutations = 2000
	}
	for range mutations {
		data := []byte(seeds[r.IntN(len(seeds))])
		for range 1 + r.IntN(3) {
			if len(data) == 0 {
				break
			}
			i := r.IntN(len(data))
			switch r.IntN(4) {
			case 0:
				data = append(data[:i:i], data[i+1:]...)
			case 1:
				data = append(data[:i:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, data[i:]...)...)
			case 2:
				data[i] = alphabet[r.IntN(len(alphabet))]
			case 3:
				j := i + r.IntN(min(20, len(data)-i)+1)
				data = append(data[:j:j], append(bytes.Clone(data[i:j]), data[j:]...)...)
			}
		}
		agree(t, data)
	}
}

// FuzzDecodeCatalog holds decodeCatalog to encoding/json on whatever the
// fuzzer makes of the seeds: go test ./schema/catalog -fuzz DecodeCatalog.
func FuzzDecodeCatalog(f *testing.F) {
	for _, s := range seedCatalogs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}
