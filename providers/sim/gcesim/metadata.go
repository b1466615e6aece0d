// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// GCE's metadata limits, as the API reference of metadata items states
// them: a key matches [a-zA-Z0-9-_]+ and is under 128 bytes, a value is at
// most 262144 bytes (256 KiB), and all keys and values together are at
// most 512 KiB.
const (
	maxMetadataKey   = 127
	maxMetadataValue = 256 << 10
	maxMetadataTotal = 512 << 10
)

var metadataKeyRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Properties the world keeps for an instance's metadata: the number of
// items, each item's key and value in the order given, and the
// fingerprint. Items are kept one to a property, so rendering a listing
// decodes nothing, however large the values.
const (
	propMetadataItems       = "metadata.items"
	propMetadataFingerprint = "metadata.fingerprint"
)

func metadataKeyProp(i int) string   { return "metadata." + strconv.Itoa(i) + ".key" }
func metadataValueProp(i int) string { return "metadata." + strconv.Itoa(i) + ".value" }

// metadataProps validates an instance's metadata, whose fields are named
// under field, and keeps it in props. Errors name an item by its field and
// its key, never by its value: values hold what a node boots with,
// secrets included.
func metadataProps(field string, md *computepb.Metadata, props map[string]string) *apiError {
	items := md.GetItems()
	seen := make(map[string]bool, len(items))
	total := 0
	for i, item := range items {
		f := fmt.Sprintf("%s.metadata.items[%d]", field, i)
		key, value := item.GetKey(), item.GetValue()
		switch {
		case item.Key == nil:
			return requiredField(f + ".key")
		case len(key) > maxMetadataKey || !metadataKeyRE.MatchString(key):
			return invalidField(f+".key", key, "Must be a match of regex '[a-zA-Z0-9-_]{1,128}'")
		case seen[key]:
			return invalidField(f+".key", key, "Metadata keys must be unique.")
		case len(value) > maxMetadataValue:
			return tooLarge(f+".value", maxMetadataValue, len(value))
		}
		seen[key] = true
		total += len(key) + len(value)
	}
	if total > maxMetadataTotal {
		return tooLarge(field+".metadata", maxMetadataTotal, total)
	}
	if len(items) == 0 {
		return nil
	}
	props[propMetadataItems] = strconv.Itoa(len(items))
	h := sha256.New()
	for i, item := range items {
		props[metadataKeyProp(i)] = item.GetKey()
		props[metadataValueProp(i)] = item.GetValue()
		fmt.Fprintf(h, "%s=%d:%s\x00", item.GetKey(), len(item.GetValue()), item.GetValue())
	}
	props[propMetadataFingerprint] = base64.StdEncoding.EncodeToString(h.Sum(nil)[:8])
	return nil
}

// tooLarge is GCE's 400 for a value over its size limit, which it words
// as "Value for field 'resource.metadata.items[0].value' is too large:
// maximum size 262144 character(s); actual size 307200." It names the
// field and the sizes, and leaves the value out.
func tooLarge(field string, limit, size int) *apiError {
	return &apiError{Status: http.StatusBadRequest, Reason: "invalid",
		Message: fmt.Sprintf("Value for field '%s' is too large: maximum size %d character(s); actual size %d.", field, limit, size)}
}

// renderMetadata is the metadata as instances.get returns it: GCE always
// returns the kind and a fingerprint, with the items when there are any.
func renderMetadata(props map[string]string) *computepb.Metadata {
	md := &computepb.Metadata{
		Kind:        proto.String("compute#metadata"),
		Fingerprint: proto.String(props[propMetadataFingerprint]),
	}
	n, _ := strconv.Atoi(props[propMetadataItems])
	for i := range n {
		md.Items = append(md.Items, &computepb.Items{
			Key:   proto.String(props[metadataKeyProp(i)]),
			Value: proto.String(props[metadataValueProp(i)]),
		})
	}
	if n == 0 {
		md.Fingerprint = proto.String(fingerprint(nil))
	}
	return md
}
