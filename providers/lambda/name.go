// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"errors"
	"fmt"
	"strings"
)

// MaxNameLength is the longest name Lambda Cloud gives an instance.
const MaxNameLength = 64

// A node's name is "gf.<fleet>.<workload>.<token without gf2->", e.g.
// gf.research.train.0123456789abcdef01234567-3: Lambda Cloud has no tags,
// so the name is where a node says whose it is and which create made it.
// Fleet and workload names have no dots (schema's names are lowercase
// letters, digits and '-'), so the name splits back into its parts.
const (
	namePrefix   = "gf."
	tokenPrefix  = "gf2-"
	tokenHashLen = 24
)

// NodeName is the name of the node a create token launches for a fleet's
// workload: deterministic, so a repeated create finds the node by it, and
// readable back into the three (see ParseNodeName). It refuses what cannot
// make such a name: an empty fleet or workload, one with a dot, a token
// not of planner.Token's form, or a name over MaxNameLength, which says by
// how much. The name grows with the token's slot, one character a digit,
// so a check made before any node exists should use a token of the
// largest slot the workload may reach.
//
// It imports nothing beyond the standard library, so that the schema's
// checks can call it.
func NodeName(fleet, workload, token string) (string, error) {
	switch {
	case fleet == "" || workload == "":
		return "", errors.New("a Lambda Cloud node name needs a fleet and a workload")
	case strings.Contains(fleet, "."):
		return "", fmt.Errorf("fleet %q has a dot, which a Lambda Cloud node name keeps for its own parts", fleet)
	case strings.Contains(workload, "."):
		return "", fmt.Errorf("workload %q has a dot, which a Lambda Cloud node name keeps for its own parts", workload)
	}
	rest, ok := tokenRest(token)
	if !ok {
		return "", fmt.Errorf("token %q is not a gpufleet create token (gf2-, %d hex digits, - and a slot)", token, tokenHashLen)
	}
	name := namePrefix + fleet + "." + workload + "." + rest
	if over := len(name) - MaxNameLength; over > 0 {
		return "", fmt.Errorf("the Lambda Cloud name of fleet %s's workload %s is %d characters, %d over Lambda's %d: shorten the fleet's or the workload's name by %d",
			fleet, workload, len(name), over, MaxNameLength, over)
	}
	return name, nil
}

// ParseNodeName reads a node name back into its fleet, workload and full
// token; ok is false for any name NodeName does not give, which is not
// gpufleet's.
func ParseNodeName(name string) (fleet, workload, token string, ok bool) {
	rest, found := strings.CutPrefix(name, namePrefix)
	if !found || len(name) > MaxNameLength {
		return "", "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", "", false
	}
	token = tokenPrefix + parts[2]
	if _, ok := tokenRest(token); !ok {
		return "", "", "", false
	}
	return parts[0], parts[1], token, true
}

// tokenRest checks a token has planner.Token's form, "gf2-", 24 lowercase
// hex digits, "-" and a slot in decimal without leading zeros, and returns
// it without its prefix.
func tokenRest(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(rest) < tokenHashLen+2 || rest[tokenHashLen] != '-' {
		return "", false
	}
	for _, c := range rest[:tokenHashLen] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	slot := rest[tokenHashLen+1:]
	if len(slot) > 1 && slot[0] == '0' || len(slot) > 9 {
		return "", false
	}
	for _, c := range slot {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest, true
}
