// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"
)

// Each form a value takes when text carries it is masked: what a JSON
// encoder, %q, a URL or base64 make of it.
func TestEveryFormOfAValueIsMasked(t *testing.T) {
	const value = `tok"en<&>/ é\with+space`
	var s Set
	s.Add(value)
	js, _ := json.Marshal(value)
	carriers := map[string]string{
		"as it is":      "join --token " + value + " now",
		"json":          `{"error":` + string(js) + `}`,
		"json, no html": `{"error":"tok\"en<&>/ é\\with+space"}`,
		"go %q":         fmt.Sprintf("error: %q", value),
		"ascii %+q":     fmt.Sprintf("error: %+q", value),
		"query":         "https://x.example/?t=" + url.QueryEscape(value),
		"path":          "https://x.example/" + url.PathEscape(value),
		"base64":        "data: " + base64.StdEncoding.EncodeToString([]byte(value)),
	}
	for name, text := range carriers {
		got := s.String(text)
		if !strings.Contains(got, Mask) {
			t.Errorf("%s: %q was not masked: %q", name, text, got)
		}
		for _, f := range formsOf(value) {
			if len(f) >= MinLen && strings.Contains(got, f) {
				t.Errorf("%s: %q still holds %q", name, got, f)
			}
		}
	}
}

func TestLinesOfAMultiLineValueAreMaskedApart(t *testing.T) {
	var s Set
	s.Add("-----BEGIN KEY-----\nMIIEvQIBADANBgkq\n-----END KEY-----\n")
	got := s.String("parse error near MIIEvQIBADANBgkq at line 2")
	if strings.Contains(got, "MIIEvQIBADANBgkq") {
		t.Errorf("a line of the key leaked: %q", got)
	}
}

func TestShortValuesAreNotMasked(t *testing.T) {
	var s Set
	s.Add("join")
	if got := s.String("bootstrap/k8s-join.yaml"); got != "bootstrap/k8s-join.yaml" {
		t.Errorf("a value shorter than %d bytes masked ordinary text: %q", MinLen, got)
	}
	if !s.Empty() {
		t.Error("a set of short values is not empty")
	}
}

// The longer of two values that overlap is masked whole, not left with a
// piece of it showing.
func TestOverlappingValuesMaskWhole(t *testing.T) {
	var s Set
	s.Add("secret-1")
	s.Add("secret-1-and-more")
	if got := s.String("x secret-1-and-more y secret-1 z"); got != "x *** y *** z" {
		t.Errorf("got %q", got)
	}
}

func TestErrorKeepsWhatItWraps(t *testing.T) {
	var s Set
	s.Add("hunter2hunter2")
	base := &fs.PathError{Op: "open", Path: "/x/hunter2hunter2", Err: fs.ErrNotExist}
	err := s.Error(fmt.Errorf("reading, %w", base))
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("message not masked: %v", err)
	}
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Errorf("the masked error lost what it wraps: %v", err)
	}
	if s.Error(nil) != nil {
		t.Error("nil error became non-nil")
	}
}

// A writer masks exactly what String masks, however the text is cut into
// writes: every cut of a text holding secrets in several forms is tried.
func TestWriterMasksAcrossWrites(t *testing.T) {
	var s Set
	s.Add("s3cr3t-value")
	s.Add("another-one")
	text := `line one s3cr3t-value, {"k":"another-one"} s3cr3t-valu no, s3cr3t-value` + "\nend another-on"
	want := s.String(text)
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j += 3 {
			var out bytes.Buffer
			w := s.Writer(&out)
			for _, part := range []string{text[:i], text[i:j], text[j:]} {
				if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
					t.Fatalf("write: %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("cut at %d and %d:\n got %q\nwant %q", i, j, out.String(), want)
			}
		}
	}
}

func TestFromEnvironTakesSecretsAndCredentials(t *testing.T) {
	s := FromEnviron([]string{
		"GPUFLEET_SECRET_JOIN=join-value-1", "GITHUB_TOKEN=ghp_token_value", "AWS_SECRET_ACCESS_KEY=aws-secret-value",
		"GPUFLEET_SLACK_WEBHOOK_URL=https://hooks.example/T0/B0/xyz", "HOME=/home/someone", "GPUFLEET_REPO=https://example.com/fleets",
	})
	got := s.String("join-value-1 ghp_token_value aws-secret-value https://hooks.example/T0/B0/xyz /home/someone https://example.com/fleets")
	if want := "*** *** *** *** /home/someone https://example.com/fleets"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
