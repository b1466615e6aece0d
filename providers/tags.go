package providers

import (
	"fmt"
	"maps"
)

// Ownership tags (labels on GCE) mark what gpufleet launched. Their keys and
// values fit the strictest of the three clouds' rules, GCE's labels.
const (
	TagFleet    = "gpufleet-fleet"
	TagWorkload = "gpufleet-workload"
	TagToken    = "gpufleet-token"
)

// OwnershipTags returns the tags a created instance carries: the workload's
// labels and gpufleet's own, which win on a clash.
func OwnershipTags(req CreateRequest) map[string]string {
	tags := maps.Clone(req.Labels)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[TagFleet] = req.Fleet
	tags[TagWorkload] = req.Workload
	tags[TagToken] = req.Token
	return tags
}

// Owned reports whether tags mark an instance as gpufleet's, and returns its
// fleet, workload and token.
func Owned(tags map[string]string) (fleet, workload, token string, ok bool) {
	fleet, workload, token = tags[TagFleet], tags[TagWorkload], tags[TagToken]
	return fleet, workload, token, fleet != "" && workload != ""
}

// InstanceName derives a cloud resource name from a create token, for clouds
// that name instances (GCE, Azure): deterministic, so a repeated create
// names the same instance, and valid for both (lowercase, digits, '-',
// starting with a letter, at most 63 characters).
func InstanceName(fleet, workload, token string) string {
	// The token is "gf1-" and 32 hex digits; 16 of them keep names unique.
	suffix := token
	if len(token) > 20 {
		suffix = token[4:20]
	}
	prefix := fmt.Sprintf("gf-%s-%s", fleet, workload)
	if max := 63 - len(suffix) - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	for len(prefix) > 0 && prefix[len(prefix)-1] == '-' {
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + "-" + suffix
}
