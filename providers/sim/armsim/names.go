// SPDX-License-Identifier: Apache-2.0

package armsim

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"
)

// ARM reads the subscription and resource group of a path before any
// resource provider sees it, whatever the method; a resource's own name is
// its provider's to judge, and only when it is created.

// subscriptionID is what ARM takes as a subscription id: a GUID.
var subscriptionID = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

func subscriptionError(sub string) *armError {
	if subscriptionID.MatchString(sub) {
		return nil
	}
	return &armError{Status: http.StatusBadRequest, Code: "InvalidSubscriptionId",
		Message: fmt.Sprintf("The provided subscription identifier '%s' is malformed or invalid.", sub)}
}

// maxGroupName is the longest resource group name ARM takes.
const maxGroupName = 90

// groupNameError is ARM's refusal of a resource group name: letters and
// digits of any script, '-', '.', '(', ')' and '_', not ending in '.', at
// most 90 characters.
func groupNameError(name string) *armError {
	var invalid []rune
	for _, c := range name {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("-.()_", c) && !strings.ContainsRune(string(invalid), c) {
			invalid = append(invalid, c)
		}
	}
	switch {
	case len(invalid) > 0:
		return &armError{Status: http.StatusBadRequest, Code: "InvalidResourceGroup",
			Message: fmt.Sprintf("The provided resource group name '%s' has these invalid characters: '%s'. The name can only be a letter, digit, '-', '.', '(', ')' or '_'.", name, string(invalid))}
	case len([]rune(name)) > maxGroupName:
		return &armError{Status: http.StatusBadRequest, Code: "InvalidResourceGroup",
			Message: fmt.Sprintf("The provided resource group name '%s' is %d characters long; the name can be at most %d.", name, len([]rune(name)), maxGroupName)}
	case strings.HasSuffix(name, "."):
		return &armError{Status: http.StatusBadRequest, Code: "InvalidResourceGroup",
			Message: fmt.Sprintf("The provided resource group name '%s' ends with a period, which the name cannot.", name)}
	}
	return nil
}

// networkName is what Network accepts as the name of a network, subnet
// or interface.
var networkName = regexp.MustCompile(`^\w([\w.-]{0,78}\w)?$`)

func networkNameError(name string) *armError {
	if networkName.MatchString(name) {
		return nil
	}
	return &armError{Status: http.StatusBadRequest, Code: "InvalidResourceName",
		Message: fmt.Sprintf("Resource name %s is invalid. The name can be up to 80 characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'.", name)}
}
