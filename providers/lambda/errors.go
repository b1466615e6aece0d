// SPDX-License-Identifier: Apache-2.0

package lambda

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/providers"
)

// codeKinds classifies the API's error codes.
var codeKinds = map[string]providers.Kind{
	"instance-operations/launch/insufficient-capacity": providers.KindCapacity,
	"global/quota-exceeded":                            providers.KindQuota,
	"global/too-many-requests":                         providers.KindThrottled,
	"global/object-does-not-exist":                     providers.KindNotFound,
	"global/invalid-api-key":                           providers.KindAuth,
	"global/account-inactive":                          providers.KindAuth,
	"global/invalid-parameters":                        providers.KindInvalid,
	"global/unknown":                                   providers.KindUnavailable,
}

// apiError classifies an error answer for op. It keeps the API's code and
// message, and says what to do where the kind asks a person to act: a
// refused key names LAMBDA_API_KEY, never the key.
func (p *Provider) apiError(op string, status int, body []byte) *providers.Error {
	var e apiErrorBody
	_ = json.Unmarshal(body, &e)
	code, msg := e.Error.Code, e.Error.Message
	kind, known := codeKinds[code]
	if !known {
		kind = providers.KindOfStatus(status)
	}
	if code == "" {
		code = strconv.Itoa(status)
	}
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	if s := e.Error.Suggestion; s != "" {
		msg += " " + s
	}
	switch kind {
	case providers.KindAuth:
		msg = fmt.Sprintf("the API key in %s was refused: %s", APIKeyEnv, msg)
	case providers.KindThrottled:
		msg = fmt.Sprintf("%s (still throttled after %d retries)", msg, p.opts.RetryMax)
	}
	return &providers.Error{Kind: kind, Cloud: Name, Op: op, Code: code, Message: p.redact(msg)}
}

// redact takes the API key out of a text that is going into an error.
// No answer is known to quote it; this keeps one that did from leaking it.
func (p *Provider) redact(s string) string {
	if p.key == "" {
		return s
	}
	return strings.ReplaceAll(s, p.key, "[API key]")
}
