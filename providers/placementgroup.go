// SPDX-License-Identifier: Apache-2.0

package providers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// PlacementGroupName names the placement group of a workload's zone gang in
// a zone: deterministic, so every run finds the same group, and valid on
// all three clouds (lowercase letters, digits and '-', starting with a
// letter, ending in a letter or digit, at most 63 characters: GCE's rule
// for resource names, stricter than EC2's and Azure's). Fleet and workload
// names hold '-' themselves, so joined they can read alike ("a-b" and "c",
// "a" and "b-c"): the name ends in 12 hex digits of a digest of the three
// kept apart, which tells them apart, and the readable part before it is
// cut to fit.
func PlacementGroupName(fleet, workload, zone string) string {
	sum := sha256.Sum256([]byte(fleet + "\x00" + workload + "\x00" + zone))
	suffix := hex.EncodeToString(sum[:])[:12]
	prefix := fmt.Sprintf("gf-%s-%s-%s", fleet, workload, strings.ToLower(zone))
	if max := 63 - 1 - len(suffix); len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-")
	}
	return prefix + "-" + suffix
}

// legacyPlacementGroupName is the name earlier versions of gpufleet gave a
// group, which two gangs could share. A group made under it may still hold
// its gang's nodes: it stays that gang's group, found by its tags, until
// the gang is gone and it is removed.
func legacyPlacementGroupName(fleet, workload, zone string) string {
	name := fmt.Sprintf("gf-%s-%s-%s", fleet, workload, strings.ToLower(zone))
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:50], "-") + "-" + hex.EncodeToString(sum[:])[:12]
}

// IsPlacementGroupName reports whether name is one gpufleet gives, or
// gave in an earlier version, to the placement group of a workload's gang
// in a zone. Whose group it is, the group's own tags say.
func IsPlacementGroupName(name, fleet, workload, zone string) bool {
	return name == PlacementGroupName(fleet, workload, zone) || name == legacyPlacementGroupName(fleet, workload, zone)
}
