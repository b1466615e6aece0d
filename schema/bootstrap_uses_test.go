package schema

import (
	"slices"
	"strings"
	"testing"
	"text/template"
)

// Every way a template can read the node's token makes its bootstrap
// differ per node; every way it can name a field the data lacks is an
// error, and nothing else is.
func TestBootstrapUsesFindEveryWayOfReading(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		perNode bool
		unknown []string
	}{
		{name: "a field", src: `{{.Fleet}}`},
		{name: "the token", src: `{{.Token}}`, perNode: true},
		{name: "the token through $", src: `{{$.Token}}`, perNode: true},
		{name: "the token inside with", src: `{{with .Zone}}{{$.Token}}{{end}}`, perNode: true},
		{name: "the token in a defined template", src: `{{define "id"}}{{.Token}}{{end}}{{template "id" .}}`, perNode: true},
		{name: "the token through a variable", src: `{{$d := .}}{{$d.Token}}`, perNode: true},
		{name: "the whole data", src: `{{.}}`, perNode: true},
		{name: "the whole data through $", src: `{{printf "%v" $}}`, perNode: true},
		{name: "the token as an argument", src: `{{printf "%s-%s" .Fleet .Token}}`, perNode: true},
		{name: "dot rebound by with is not the data", src: `{{with .Zone}}{{.}}{{end}}`},
		{name: "an unknown field", src: `{{.HeadAddress}}`, unknown: []string{"HeadAddress"}},
		{name: "an unknown field through $", src: `{{with .Zone}}{{$.HeadAddress}}{{end}}`, unknown: []string{"HeadAddress"}},
		{name: "an unknown field in an if", src: `{{if .Zone}}{{.Head}}{{else}}{{.Tail}}{{end}}`, unknown: []string{"Head", "Tail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := template.New("b").Funcs(bootstrapFuncs).Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			var perNode bool
			var unknown []string
			for _, u := range bootstrapUses(tmpl) {
				if u.strict && !slices.Contains(bootstrapFields, u.field) {
					unknown = append(unknown, u.field)
				}
				perNode = perNode || u.all || u.field == "Token"
			}
			if perNode != tt.perNode || !slices.Equal(unknown, tt.unknown) {
				t.Errorf("per node %v, unknown %q; want %v, %q", perNode, unknown, tt.perNode, tt.unknown)
			}
			// The template engine agrees: the data has the fields found,
			// and rendering with a token that differs changes the output
			// exactly when the walk says the bootstrap is per node.
			if len(tt.unknown) == 0 {
				a, errA := render(tmpl, BootstrapData{Fleet: "f", Zone: "z", Token: "t1"})
				b, errB := render(tmpl, BootstrapData{Fleet: "f", Zone: "z", Token: "t2"})
				if errA != nil || errB != nil {
					t.Fatalf("rendering: %v %v", errA, errB)
				}
				if (a != b) != tt.perNode {
					t.Errorf("renders with two tokens differ: %v, walk says per node: %v", a != b, tt.perNode)
				}
			}
		})
	}
}

func render(tmpl *template.Template, data BootstrapData) (string, error) {
	var out strings.Builder
	err := tmpl.Execute(&out, data)
	return out.String(), err
}
