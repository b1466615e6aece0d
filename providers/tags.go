// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/planner"
)

// Ownership tags (labels on GCE) mark what gpufleet launched. Their keys and
// values fit the strictest of the three clouds' rules, GCE's labels.
const (
	TagFleet    = "gpufleet-fleet"
	TagWorkload = "gpufleet-workload"
	TagToken    = "gpufleet-token"
	// TagBootstrap names the version of the bootstrap file a node was
	// launched with, so a node of an older one is replaced.
	TagBootstrap = "gpufleet-bootstrap"
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
	delete(tags, TagBootstrap)
	if req.Bootstrap != nil && req.Bootstrap.Digest != "" {
		tags[TagBootstrap] = req.Bootstrap.Digest
	}
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
// starting with a letter, at most 63 characters). A token with a slot
// (planner.Token) ends the name with 12 of its hex digits and the slot, so
// the nodes of a batch are named apart; an older token with 16 of its hex
// digits.
func InstanceName(fleet, workload, token string) string {
	suffix := token
	if base, slot, ok := planner.TokenSlot(token); ok {
		suffix = base[4:16] + "-" + strconv.Itoa(slot)
	} else if len(token) > 20 {
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

// NodeToken is the token of a node launched in a batch under the token of
// the batch's first node, on a cloud that names each node (GCE's
// bulkInsert labels every node alike): the slot its name ends with picks
// the node's own token. ok is false when the name is not one InstanceName
// gives for a node of that batch.
func NodeToken(fleet, workload, first, name string) (string, bool) {
	if name == InstanceName(fleet, workload, first) {
		return first, true
	}
	_, slot, ok := planner.TokenSlot(first)
	i := strings.LastIndexByte(name, '-')
	if !ok || i < 0 {
		return "", false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n <= slot {
		return "", false
	}
	token, ok := planner.TokenAt(first, n-slot)
	if !ok || InstanceName(fleet, workload, token) != name {
		return "", false
	}
	return token, true
}
