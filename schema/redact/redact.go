// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Mask is what a secret's value is replaced by.
const Mask = "***"

// MinLen is the shortest value a Set masks: a shorter one would mask
// ordinary words in what gpufleet writes ("join" in k8s-join.yaml), so a
// Set ignores it — and, as what cannot be masked cannot be kept out of
// outputs, a bootstrap refuses a secret shorter than this.
const MinLen = 8

// Set is the secrets' values to mask. The zero value is empty and ready;
// a Set is safe for concurrent use.
type Set struct {
	mu       sync.RWMutex
	forms    map[string]bool
	replacer *strings.Replacer
	// longest is the length of the longest form: a Writer holds back
	// less than that of what may be the start of a secret split over two
	// writes.
	longest int
}

// Add makes the set mask value, in each form it may take in text. Values
// shorter than MinLen are ignored.
func (s *Set) Add(value string) {
	if len(value) < MinLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forms == nil {
		s.forms = map[string]bool{}
	}
	added := false
	for _, f := range formsOf(value) {
		if len(f) >= MinLen && !s.forms[f] {
			s.forms[f] = true
			added = true
		}
	}
	if !added {
		return
	}
	// Longest first: a value masks before a line of it, and the
	// replacer tries its pairs in order at each position.
	all := slices.Collect(func(yield func(string) bool) {
		for f := range s.forms {
			if !yield(f) {
				return
			}
		}
	})
	slices.SortFunc(all, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(all))
	for _, f := range all {
		pairs = append(pairs, f, Mask)
	}
	s.replacer = strings.NewReplacer(pairs...)
	s.longest = len(all[0])
}

// formsOf is value as text may hold it: as it is, escaped for JSON (with
// and without HTML escaping) and for Go's %q, URL-escaped, in base64, and
// each line of a value that spans lines.
func formsOf(value string) []string {
	forms := []string{value}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.Encode(value)
	forms = append(forms, unquote(strings.TrimSuffix(b.String(), "\n")))
	b.Reset()
	enc.SetEscapeHTML(false)
	enc.Encode(value)
	forms = append(forms, unquote(strings.TrimSuffix(b.String(), "\n")))
	forms = append(forms, unquote(strconv.Quote(value)), unquote(strconv.QuoteToASCII(value)))
	forms = append(forms, url.QueryEscape(value), url.PathEscape(value))
	forms = append(forms, base64.StdEncoding.EncodeToString([]byte(value)), base64.URLEncoding.EncodeToString([]byte(value)),
		base64.RawStdEncoding.EncodeToString([]byte(value)))
	if strings.ContainsAny(value, "\r\n") {
		for line := range strings.Lines(value) {
			if line = strings.TrimRight(line, "\r\n"); len(line) >= MinLen {
				forms = append(forms, line)
			}
		}
	}
	return forms
}

func unquote(q string) string { return q[1 : len(q)-1] }

// String is text with every value of the set masked.
func (s *Set) String(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	r := s.replacer
	s.mu.RUnlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// Bytes is data with every value of the set masked; data itself is left
// as it was.
func (s *Set) Bytes(data []byte) []byte {
	if s == nil || s.Empty() {
		return data
	}
	return []byte(s.String(string(data)))
}

// Empty reports whether the set masks nothing.
func (s *Set) Empty() bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.replacer == nil
}

// Error is err with its message masked; errors.Is and errors.As still see
// what it wraps. nil stays nil.
func (s *Set) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if masked := s.String(msg); masked != msg {
		return &maskedError{msg: masked, err: err}
	}
	return err
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// partialSuffix is the length of the longest end of text that is the
// start of a form but not a whole one: what a writer must hold back until
// it knows whether a secret follows.
func (s *Set) partialSuffix(text []byte) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for n := min(len(text), s.longest-1); n > 0; n-- {
		tail := string(text[len(text)-n:])
		for f := range s.forms {
			if len(f) > n && strings.HasPrefix(f, tail) {
				return n
			}
		}
	}
	return 0
}

// credentialSuffixes mark the environment variables whose values are
// credentials by their name's end, as CI systems and SDKs name them.
var credentialSuffixes = []string{"_TOKEN", "_SECRET", "_PASSWORD", "_PASSPHRASE", "_SECRET_ACCESS_KEY", "_API_KEY", "_PRIVATE_KEY", "_WEBHOOK_URL", "_CONNECTION_STRING"}

// SecretEnvPrefix names the environment variables that hold bootstrap
// secrets: GPUFLEET_SECRET_<NAME>.
const SecretEnvPrefix = "GPUFLEET_SECRET_"

// FromEnviron is a set of the secrets in an environment (os.Environ's
// form): every bootstrap secret, and every variable named as credentials
// are (…_TOKEN, …_SECRET, …_PASSWORD and the like).
func FromEnviron(environ []string) *Set {
	s := &Set{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && IsCredential(name) {
			s.Add(value)
		}
	}
	return s
}

// IsCredential reports whether an environment variable's name marks its
// value as a secret.
func IsCredential(name string) bool {
	upper := strings.ToUpper(name)
	if strings.HasPrefix(upper, SecretEnvPrefix) {
		return true
	}
	for _, suffix := range credentialSuffixes {
		if strings.HasSuffix(upper, suffix) {
			return true
		}
	}
	return false
}

// FromEnv is FromEnviron of the process's environment.
func FromEnv() *Set { return FromEnviron(os.Environ()) }

// URL is a URL with its user part hidden, as it may hold a token; text
// that does not parse as a URL is returned as it is.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = url.User(Mask)
	return u.String()
}
