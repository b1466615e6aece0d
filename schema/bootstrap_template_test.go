// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"strings"
	"testing"
	"text/template"
)

// The bootstrap language takes fields, secrets standing alone, constants
// and ifs; the engine agrees with the walk on what a template reads: a
// template whose output changes with the token is one the walk marks as
// per node, and no rendering is longer than the bound the walk computes.
func TestBootstrapLanguageAccepts(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		perNode bool
	}{
		{name: "text only", src: "#!/bin/sh\necho hello\n"},
		{name: "a field", src: `{{.Fleet}}`},
		{name: "every field", src: `{{.Fleet}}{{.Workload}}{{.Cloud}}{{.Region}}{{.Zone}}{{.InstanceType}}{{.Market}}{{.Token}}`, perNode: true},
		{name: "the token", src: `id={{.Token}}`, perNode: true},
		{name: "a constant", src: `{{"{{"}}.Field{{"}}"}}`},
		{name: "a secret", src: `--token {{secret "JOIN"}}`},
		{name: "a comment", src: `{{/* not rendered */}}x`},
		{name: "trimmed", src: "a {{- .Zone -}} b"},
		{name: "if on a field", src: `{{if .Zone}}zonal{{end}}`},
		{name: "if eq else", src: `{{if eq .Cloud "aws"}}imds{{else if eq .Cloud "gcp"}}metadata{{else}}wire{{end}}`},
		{name: "eq with several", src: `{{if eq .Market "spot" "on-demand"}}known{{end}}`},
		{name: "ne, not, and, or", src: `{{if and (ne .Cloud "azure") (not .Token) (or .Zone .Region)}}y{{end}}`, perNode: true},
		{name: "the token in an if", src: `{{if eq .Token "x"}}a{{else}}b{{end}}`, perNode: true},
		{name: "a secret in a branch", src: `{{if eq .Cloud "aws"}}{{secret "JOIN"}}{{end}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := parseBootstrap("b", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			uses, problems := checkTemplate(tmpl)
			if len(problems) > 0 {
				t.Fatalf("refused: %s", problems[0].msg)
			}
			perNode := false
			for _, u := range uses {
				perNode = perNode || u.field == "Token"
			}
			if perNode != tt.perNode {
				t.Errorf("per node %v, want %v", perNode, tt.perNode)
			}
			long := func(string) int { return 40 }
			bound := renderedBound(tmpl.Tree.Root, long, func(string) int { return 12 })
			b := &Bootstrap{File: "b", Source: []byte(tt.src), Secrets: []string{"JOIN"}}
			lookup := func(string) (string, bool) { return "s3cret-value", true }
			data := []BootstrapData{
				{Fleet: "f", Workload: "w", Cloud: "aws", Region: "r", Zone: "", Market: "spot", Token: "t1"},
				{Fleet: "f", Workload: "w", Cloud: "gcp", Region: "r", Zone: "z", Market: "on-demand", Token: "t2"},
				{Fleet: "f", Workload: "w", Cloud: "azure", Region: "", Zone: "z", Market: "spot", Token: ""},
				{Fleet: strings.Repeat("f", 40), Workload: strings.Repeat("w", 40), Cloud: "aws", Region: strings.Repeat("r", 40),
					Zone: strings.Repeat("z", 40), InstanceType: strings.Repeat("i", 40), Market: "on-demand", Token: strings.Repeat("t", 40)},
			}
			var outs []string
			for _, d := range data {
				out, err := b.Render(d, lookup)
				if err != nil {
					t.Fatalf("render %+v: %v", d, err)
				}
				if len(out) > bound {
					t.Errorf("rendered %d bytes, over the bound of %d", len(out), bound)
				}
				outs = append(outs, string(out))
			}
			// The engine's own view of the token: render the same node
			// with another token.
			again := data[1]
			again.Token = "t9"
			other, err := b.Render(again, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if string(other) != outs[1] && !perNode {
				t.Error("the output changes with the token, but the walk did not mark the bootstrap per node")
			}
		})
	}
}

// Whatever computes, loops, or hands a secret to something else is refused
// with where it is and what the language has.
func TestBootstrapLanguageRefuses(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"range over a number", `{{range 1000000000}}x{{end}}`, "{{range}} is not allowed"},
		{"range over a secret", `{{range secret "K"}}{{end}}`, "{{range}} is not allowed"},
		{"a secret of a secret", `{{secret (secret "K")}}`, `{{secret "NAME"}} stands alone`},
		{"a secret through printf", `{{printf "%s" (secret "K")}}`, `{{secret "NAME"}} stands alone`},
		{"a secret piped", `{{secret "K" | printf "%q"}}`, "pipelines (|) are not allowed"},
		{"a secret in a test", `{{if eq (secret "K") "x"}}y{{end}}`, `{{secret "NAME"}} stands alone`},
		{"a secret as a test", `{{if secret "K"}}y{{end}}`, `{{secret "NAME"}} stands alone`},
		{"a secret named by a field", `{{secret .Zone}}`, `{{secret "NAME"}} stands alone`},
		{"recursion", `{{define "a"}}{{template "a"}}{{end}}{{template "a"}}`, "{{define}} and {{block}} are not allowed"},
		{"a block", `{{block "x" .}}x{{end}}`, "{{template}} is not allowed"},
		{"with", `{{with .Zone}}{{.}}{{end}}`, "{{with}} is not allowed"},
		{"a variable", `{{$x := .Zone}}{{$x}}`, "variables are not allowed"},
		{"the whole data", `{{.}}`, "{{.}} is not allowed"},
		{"dollar", `{{$}}`, "variables are not allowed"},
		{"printf", `{{printf "%0999999999d" 1}}`, "calling printf is not allowed"},
		{"len", `{{len .Zone}}`, "calling len is not allowed"},
		{"html", `{{html .Zone}}`, "calling html is not allowed"},
		{"a number", `{{1}}`, "{{1}} is not allowed"},
		{"a field of a field", `{{.Zone.Name}}`, "a field has no fields"},
		{"an unknown field", `{{.HeadAddress}}`, "unknown field .HeadAddress"},
		{"an unknown field in an else", `{{if .Zone}}a{{else}}{{.Tail}}{{end}}`, "unknown field .Tail"},
		{"a pipeline in a test", `{{if .Zone | not}}a{{end}}`, "pipelines (|) are not allowed"},
		{"a call in a test", `{{if len .Zone}}a{{end}}`, "calling len is not allowed"},
		{"a test in eq", `{{if eq (not .Zone) "x"}}a{{end}}`, "eq and ne compare fields"},
		{"a number in eq", `{{if eq .Zone 1}}a{{end}}`, "is not allowed here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := parseBootstrap("b", []byte(tt.src))
			if err != nil {
				t.Fatalf("does not parse: %v", err)
			}
			_, problems := checkTemplate(tmpl)
			if len(problems) == 0 {
				t.Fatal("accepted")
			}
			if !strings.Contains(problems[0].msg, tt.want) {
				t.Errorf("refused with %q, want %q", problems[0].msg, tt.want)
			}
			// Render refuses it too, for a Bootstrap that did not come
			// from a load.
			b := &Bootstrap{File: "b", Source: []byte(tt.src), Secrets: []string{"K"}}
			if _, err := b.Render(BootstrapData{Cloud: "aws"}, func(string) (string, bool) { return "value-of-k", true }); err == nil {
				t.Error("Render rendered it")
			}
		})
	}
}

// Render stops at the cloud's limit instead of building what the cloud
// would refuse, and a secret too short to mask is refused by name.
func TestRenderBounds(t *testing.T) {
	b := &Bootstrap{File: "b.sh", Source: []byte(`{{secret "BIG"}}`), Secrets: []string{"BIG"}}
	_, err := b.Render(BootstrapData{Cloud: "aws"}, func(string) (string, bool) { return strings.Repeat("x", 17<<10), true })
	if err == nil || !strings.Contains(err.Error(), "aws takes at most 16384 bytes of user data") || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("a render over EC2's limit: %v", err)
	}
	_, err = b.Render(BootstrapData{Cloud: "aws"}, func(string) (string, bool) { return "short", true })
	if err == nil || !strings.Contains(err.Error(), "secret BIG is 5 bytes") || strings.Contains(err.Error(), "short") {
		t.Errorf("a short secret: %v", err)
	}
	if _, err := template.New("x").Parse("{{"); err == nil {
		t.Fatal("the template package parses anything")
	}
}
