package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"cuelang.org/go/cue"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// MaxBootstrap is, per cloud, the most a node's bootstrap may hold, as the
// cloud counts it: EC2 user data 16 KB before base64, Azure custom data
// 64 KB, a GCE metadata value 256 KB.
var MaxBootstrap = map[string]int{
	catalog.AWS:   16 << 10,
	catalog.Azure: 64 << 10,
	catalog.GCP:   256 << 10,
}

// SecretEnvPrefix is how a bootstrap's secrets are found in the
// environment: GPUFLEET_SECRET_<NAME>.
const SecretEnvPrefix = "GPUFLEET_SECRET_"

// BootstrapData is what a bootstrap file is rendered with, for one node.
type BootstrapData struct {
	Fleet, Workload, Cloud, Region, Zone, InstanceType, Market, Token string
}

// bootstrapFuncs are the template's functions; secret is replaced at
// render time, and at load only marks where secrets are used.
var bootstrapFuncs = template.FuncMap{"secret": func(string) (string, error) { return "", nil }}

// BootstrapFor is the bootstrap a workload's nodes run on a cloud: the
// workload's own, or the cloud's launch default, or nil.
func (c *Config) BootstrapFor(w *Workload, cloud string) *Bootstrap {
	if w.Bootstrap != nil {
		return w.Bootstrap
	}
	return c.cloudBootstrap(cloud)
}

func (c *Config) cloudBootstrap(cloud string) *Bootstrap {
	switch cloud {
	case catalog.AWS:
		return c.Clouds.AWS.Launch.Bootstrap
	case catalog.Azure:
		return c.Clouds.Azure.Launch.Bootstrap
	case catalog.GCP:
		return c.Clouds.GCP.Launch.Bootstrap
	}
	return nil
}

// loadBootstrap reads a bootstrap's file through the repository's root,
// checks it parses as a template whose secrets are all declared, and that
// it fits every cloud it may go to, and fills its Source and Digest. v is
// the value holding the bootstrap, at its path there.
func (l *loader) loadBootstrap(b *Bootstrap, v cue.Value, at, base string, clouds []string) {
	fail := func(field, format string, args ...any) {
		pos := valuePosition(v, at+"."+field)
		p := base + "." + at + "." + field
		l.errs.add(pos, p, format, args...)
	}
	b.Pos = valuePosition(v, at)
	root, err := os.OpenRoot(l.dir)
	if err != nil {
		fail("file", "cannot open the repository: %v", unwrapPathError(err))
		return
	}
	defer root.Close()
	src, err := readFile(root, b.File)
	if err != nil {
		fail("file", "%s: %v", b.File, err)
		return
	}
	b.Source = src
	sum := sha256.Sum256(src)
	b.Digest = "sha256:" + hex.EncodeToString(sum[:])[:12]
	for _, cloud := range clouds {
		if limit := MaxBootstrap[cloud]; len(src) > limit {
			fail("file", "%s is %d bytes; %s takes at most %d bytes of %s", b.File, len(src), cloud, limit, bootstrapKind(cloud))
		}
	}
	tmpl, err := template.New(b.File).Funcs(bootstrapFuncs).Option("missingkey=error").Parse(string(src))
	if err != nil {
		// The template package says "template: FILE:LINE: message".
		pos, msg := bootstrapPosition(b.File, strings.TrimPrefix(err.Error(), "template: "))
		l.errs.add(pos, base+"."+at+".file", "%s", msg)
		return
	}
	for _, use := range bootstrapUses(tmpl) {
		switch {
		case use.secret != "" && !slices.Contains(b.Secrets, use.secret):
			line, col := lineCol(src, int(use.pos))
			l.errs.add(Position{File: b.File, Line: line, Column: col}, base+"."+at+".secrets",
				"secret %q is not declared: add it to %s.secrets", use.secret, at)
		case use.strict && !slices.Contains(bootstrapFields, use.field):
			line, col := lineCol(src, int(use.pos))
			l.errs.add(Position{File: b.File, Line: line, Column: col}, base+"."+at+".file",
				"unknown field .%s: a bootstrap knows %s", use.field, "."+strings.Join(bootstrapFields, ", ."))
		case use.all || use.field == "Token":
			// The node's own token makes the bootstrap differ per node.
			b.PerNode = true
		}
	}
}

var bootstrapFields = []string{"Fleet", "Workload", "Cloud", "Region", "Zone", "InstanceType", "Market", "Token"}

func bootstrapKind(cloud string) string {
	switch cloud {
	case catalog.AWS:
		return "user data"
	case catalog.Azure:
		return "custom data"
	}
	return "metadata value"
}

// bootstrapPosition reads "FILE:LINE: message" back into a position and
// the message.
func bootstrapPosition(file, msg string) (Position, string) {
	pos := Position{File: file}
	rest, ok := strings.CutPrefix(msg, file+":")
	if !ok {
		return pos, msg
	}
	n, text, _ := strings.Cut(rest, ":")
	line, err := strconv.Atoi(n)
	if err != nil {
		return pos, msg
	}
	pos.Line = line
	return pos, strings.TrimSpace(text)
}

func lineCol(src []byte, offset int) (line, col int) {
	line, col = 1, 1
	for _, c := range src[:min(offset, len(src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// bootstrapUse is a field or a secret a template refers to. all marks a
// use of the whole data ({{.}} or {{$}}), which reads every field; strict
// marks a field that surely names one of the data's, so an unknown name
// is an error (a field of another value, or in a template defined apart
// whose dot is not known, counts only towards what the template may read).
type bootstrapUse struct {
	field, secret string
	all, strict   bool
	pos           parse.Pos
}

// bootstrapUses walks a template, and every template it defines, for the
// fields of the data it reads and the secrets it asks for.
func bootstrapUses(tmpl *template.Template) []bootstrapUse {
	var out []bootstrapUse
	for _, t := range tmpl.Templates() {
		if t.Tree == nil {
			continue
		}
		main := t.Name() == tmpl.Name()
		w := usesWalker{out: &out, main: main}
		// A template defined apart sees whatever dot its caller passes;
		// taking it for the data can only find more fields read.
		w.walk(t.Tree.Root, true)
	}
	return out
}

type usesWalker struct {
	out  *[]bootstrapUse
	main bool
}

func (w usesWalker) add(u bootstrapUse) { *w.out = append(*w.out, u) }

// walk visits n; dotIsData says whether dot is the bootstrap's data there
// (it is not inside range and with, which rebind it).
func (w usesWalker) walk(n parse.Node, dotIsData bool) {
	switch n := n.(type) {
	case nil:
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.walk(c, dotIsData)
		}
	case *parse.ActionNode:
		w.walk(n.Pipe, dotIsData)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			w.walk(c, dotIsData)
		}
	case *parse.CommandNode:
		if len(n.Args) == 2 {
			if id, ok := n.Args[0].(*parse.IdentifierNode); ok && id.Ident == "secret" {
				if s, ok := n.Args[1].(*parse.StringNode); ok {
					w.add(bootstrapUse{secret: s.Text, pos: s.Pos})
				}
			}
		}
		for _, a := range n.Args {
			w.walk(a, dotIsData)
		}
	case *parse.FieldNode:
		if dotIsData {
			w.add(bootstrapUse{field: n.Ident[0], strict: w.main, pos: n.Pos})
		}
	case *parse.DotNode:
		if dotIsData {
			w.add(bootstrapUse{all: true, pos: n.Pos})
		}
	case *parse.VariableNode:
		switch {
		case n.Ident[0] == "$" && len(n.Ident) == 1:
			w.add(bootstrapUse{all: true, pos: n.Pos})
		case n.Ident[0] == "$":
			w.add(bootstrapUse{field: n.Ident[1], strict: w.main, pos: n.Pos})
		case len(n.Ident) > 1:
			// $x.F: $x may hold the data; what it reads counts.
			w.add(bootstrapUse{field: n.Ident[1], pos: n.Pos})
		}
	case *parse.ChainNode:
		w.walk(n.Node, dotIsData)
	case *parse.IfNode:
		w.walk(n.Pipe, dotIsData)
		w.walk(n.List, dotIsData)
		w.walk(n.ElseList, dotIsData)
	case *parse.RangeNode:
		w.walk(n.Pipe, dotIsData)
		w.walk(n.List, false)
		w.walk(n.ElseList, dotIsData)
	case *parse.WithNode:
		w.walk(n.Pipe, dotIsData)
		w.walk(n.List, false)
		w.walk(n.ElseList, dotIsData)
	case *parse.TemplateNode:
		w.walk(n.Pipe, dotIsData)
	}
}

// Render renders a bootstrap for one node, with each secret it declares
// read by lookup (the environment, GPUFLEET_SECRET_<NAME>, in gpufleet).
// A secret lookup does not find fails the render, naming the secret, never
// its value; the result holds the secrets' values, so it goes to the
// cloud only.
func (b *Bootstrap) Render(data BootstrapData, lookup func(name string) (string, bool)) ([]byte, error) {
	var missing error
	funcs := template.FuncMap{"secret": func(name string) (string, error) {
		if !slices.Contains(b.Secrets, name) {
			missing = fmt.Errorf("secret %q is not declared", name)
			return "", missing
		}
		v, ok := lookup(name)
		if !ok {
			missing = fmt.Errorf("secret %s is not set: export %s%s", name, SecretEnvPrefix, name)
			return "", missing
		}
		return v, nil
	}}
	tmpl, err := template.New(b.File).Funcs(funcs).Option("missingkey=error").Parse(string(b.Source))
	if err != nil {
		return nil, fmt.Errorf("bootstrap %s: %w", b.File, err)
	}
	var out strings.Builder
	if err := tmpl.Execute(&out, data); err != nil {
		// The error names the template position and the function's own
		// message, never a secret's value.
		if missing != nil {
			pos, _ := bootstrapPosition(b.File, strings.TrimPrefix(err.Error(), "template: "))
			return nil, fmt.Errorf("%s: %w", pos, missing)
		}
		return nil, fmt.Errorf("bootstrap %s: %w", b.File, err)
	}
	if limit := MaxBootstrap[data.Cloud]; limit > 0 && out.Len() > limit {
		return nil, fmt.Errorf("bootstrap %s renders to %d bytes; %s takes at most %d bytes of %s", b.File, out.Len(), data.Cloud, limit, bootstrapKind(data.Cloud))
	}
	return []byte(out.String()), nil
}
