// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
)

// A bootstrap file is a template in a small part of text/template's
// language: what a node's first boot needs to know of the node, and
// nothing that computes. Loops, defined templates, variables, pipelines
// and function calls are refused when the repository loads, so a file
// renders in one pass over itself, to at most a size known before any
// node is launched, and a secret's value can only be copied into the
// output, never handed to a function whose error would print it.
const templateLanguage = `a bootstrap may use {{.Field}}, {{secret "NAME"}}, {{"text"}} and {{if …}}…{{else}}…{{end}} on fields and "text" with eq, ne, not, and, or`

// bootstrapFields are the data a bootstrap renders with.
var bootstrapFields = []string{"Fleet", "Workload", "Cloud", "Region", "Zone", "InstanceType", "Market", "Token"}

// bootstrapUse is a field or a secret a template uses.
type bootstrapUse struct {
	field, secret string
	pos           parse.Pos
}

// templateProblem is a construct of a template outside the language, at
// its byte offset.
type templateProblem struct {
	pos parse.Pos
	msg string
	// action says pos is inside the action at fault, whose opening
	// delimiter is where to point.
	action bool
}

// templateCheck walks a parsed template for what it uses and what it may
// not.
type templateCheck struct {
	uses     []bootstrapUse
	problems []templateProblem
}

// checkTemplate checks a parsed bootstrap against the language and lists
// the fields and secrets it uses.
func checkTemplate(tmpl *template.Template) ([]bootstrapUse, []templateProblem) {
	var c templateCheck
	for _, t := range tmpl.Templates() {
		if t.Name() != tmpl.Name() && t.Tree != nil {
			c.refuse(t.Tree.Root, "{{define}} and {{block}} are not allowed: %s", templateLanguage)
		}
	}
	if tmpl.Tree != nil {
		c.list(tmpl.Tree.Root)
	}
	slices.SortStableFunc(c.problems, func(a, b templateProblem) int { return int(a.pos - b.pos) })
	return c.uses, c.problems
}

func (c *templateCheck) refuse(n parse.Node, format string, args ...any) {
	_, isField := n.(*parse.FieldNode)
	c.problems = append(c.problems, templateProblem{pos: n.Position(), msg: fmt.Sprintf(format, args...), action: !isField})
}

// offset is where in src to point for a problem: at the field at fault, or
// at the opening of the action at fault.
func (p templateProblem) offset(src []byte) int {
	at := min(int(p.pos), len(src))
	if p.action {
		if i := bytes.LastIndex(src[:at], []byte("{{")); i >= 0 {
			return i
		}
	}
	return at
}

func (c *templateCheck) list(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.TextNode, *parse.CommentNode:
		case *parse.ActionNode:
			c.output(n, n.Pipe)
		case *parse.IfNode:
			c.condition(n.Pipe)
			c.list(n.List)
			c.list(n.ElseList)
		case *parse.RangeNode:
			c.refuse(n, "{{range}} is not allowed: %s", templateLanguage)
		case *parse.WithNode:
			c.refuse(n, "{{with}} is not allowed: %s", templateLanguage)
		case *parse.TemplateNode:
			c.refuse(n, "{{template}} is not allowed: %s", templateLanguage)
		case *parse.BreakNode, *parse.ContinueNode:
			c.refuse(n, "{{break}} and {{continue}} are not allowed: %s", templateLanguage)
		default:
			c.refuse(n, "%s is not allowed: %s", n, templateLanguage)
		}
	}
}

// pipeline checks what every pipeline must be: one command, binding no
// variable.
func (c *templateCheck) pipeline(p *parse.PipeNode) (*parse.CommandNode, bool) {
	switch {
	case p == nil || len(p.Cmds) == 0:
		return nil, false
	case len(p.Decl) > 0:
		c.refuse(p, "variables are not allowed: %s", templateLanguage)
		return nil, false
	case len(p.Cmds) > 1:
		c.refuse(p.Cmds[1], "pipelines (|) are not allowed: %s", templateLanguage)
		return nil, false
	}
	return p.Cmds[0], true
}

// output checks what an action prints: a field, a constant, or a secret
// standing alone.
func (c *templateCheck) output(action *parse.ActionNode, p *parse.PipeNode) {
	cmd, ok := c.pipeline(p)
	if !ok {
		return
	}
	if name, ok := secretCall(cmd); ok {
		c.uses = append(c.uses, bootstrapUse{secret: name, pos: cmd.Args[1].Position()})
		return
	}
	if len(cmd.Args) == 1 {
		switch a := cmd.Args[0].(type) {
		case *parse.FieldNode:
			c.field(a)
			return
		case *parse.StringNode:
			return
		}
	}
	c.call(cmd)
}

// condition checks an if's test: a field or constant, or eq, ne, not, and,
// or over those and parenthesised tests.
func (c *templateCheck) condition(p *parse.PipeNode) {
	if cmd, ok := c.pipeline(p); ok {
		c.test(cmd)
	}
}

func (c *templateCheck) test(cmd *parse.CommandNode) {
	if mentionsSecret(cmd) {
		c.refuse(cmd, secretMisuse)
		return
	}
	if len(cmd.Args) == 1 {
		c.operand(cmd.Args[0], true)
		return
	}
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	if !ok {
		c.refuse(cmd, "%s is not a test", cmd)
		return
	}
	args := cmd.Args[1:]
	switch id.Ident {
	case "eq", "ne":
		if len(args) < 2 || (id.Ident == "ne" && len(args) != 2) {
			c.refuse(cmd, "%s takes two operands", id.Ident)
			return
		}
		for _, a := range args {
			c.operand(a, false)
		}
	case "not":
		if len(args) != 1 {
			c.refuse(cmd, "not takes one test")
			return
		}
		c.operand(args[0], true)
	case "and", "or":
		for _, a := range args {
			c.operand(a, true)
		}
	default:
		c.call(cmd)
	}
}

// operand checks an argument of a test: a field or a constant, or, where
// a test may stand (nested), a parenthesised test.
func (c *templateCheck) operand(n parse.Node, nested bool) {
	switch n := n.(type) {
	case *parse.FieldNode:
		c.field(n)
	case *parse.StringNode:
	case *parse.PipeNode:
		if !nested {
			c.refuse(n, "eq and ne compare fields and \"text\", not tests")
			return
		}
		if cmd, ok := c.pipeline(n); ok {
			c.test(cmd)
		}
	case *parse.DotNode:
		c.refuse(n, "{{.}} is not allowed: name a field, such as {{.Zone}}")
	case *parse.VariableNode:
		c.refuse(n, "variables are not allowed")
	default:
		c.refuse(n, "%s is not allowed here", n)
	}
}

func (c *templateCheck) field(f *parse.FieldNode) {
	switch {
	case len(f.Ident) > 1:
		c.refuse(f, "%s: a field has no fields", f)
	case !slices.Contains(bootstrapFields, f.Ident[0]):
		c.refuse(f, "unknown field .%s: a bootstrap knows .%s", f.Ident[0], strings.Join(bootstrapFields, ", ."))
	default:
		c.uses = append(c.uses, bootstrapUse{field: f.Ident[0], pos: f.Pos})
	}
}

// secretMisuse is why a secret may not be used but standing alone.
const secretMisuse = `{{secret "NAME"}} stands alone, with a quoted name: a secret goes into the file as it is, never through a function, a test or another secret`

// mentionsSecret reports whether a node calls secret anywhere in it.
func mentionsSecret(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.IdentifierNode:
		return n.Ident == "secret"
	case *parse.CommandNode:
		return slices.ContainsFunc(n.Args, mentionsSecret)
	case *parse.PipeNode:
		return n != nil && slices.ContainsFunc(n.Cmds, func(c *parse.CommandNode) bool { return mentionsSecret(c) })
	case *parse.ChainNode:
		return mentionsSecret(n.Node)
	}
	return false
}

// call refuses a command that calls a function, naming the function; a
// secret used other than standing alone gets its own word, as it is the
// use most likely meant.
func (c *templateCheck) call(cmd *parse.CommandNode) {
	if mentionsSecret(cmd) {
		c.refuse(cmd, secretMisuse)
		return
	}
	switch a := cmd.Args[0].(type) {
	case *parse.IdentifierNode:
		c.refuse(cmd, "calling %s is not allowed: %s", a.Ident, templateLanguage)
	case *parse.DotNode:
		c.refuse(cmd, "{{.}} is not allowed: name a field, such as {{.Zone}}")
	case *parse.VariableNode:
		c.refuse(cmd, "variables are not allowed")
	default:
		c.refuse(cmd, "{{%s}} is not allowed: %s", cmd, templateLanguage)
	}
}

// secretCall reports whether cmd is `secret "NAME"`, and the name.
func secretCall(cmd *parse.CommandNode) (string, bool) {
	if len(cmd.Args) != 2 {
		return "", false
	}
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	if !ok || id.Ident != "secret" {
		return "", false
	}
	s, ok := cmd.Args[1].(*parse.StringNode)
	if !ok {
		return "", false
	}
	return s.Text, true
}

// renderedBound is the most a checked template can render to: its text
// and constants, each field at its longest and each secret at its length,
// the longer branch of each if.
func renderedBound(l *parse.ListNode, field func(string) int, secret func(string) int) int {
	if l == nil {
		return 0
	}
	size := 0
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			size += len(n.Text)
		case *parse.ActionNode:
			cmd := n.Pipe.Cmds[0]
			if name, ok := secretCall(cmd); ok {
				size += secret(name)
				continue
			}
			switch a := cmd.Args[0].(type) {
			case *parse.FieldNode:
				size += field(a.Ident[0])
			case *parse.StringNode:
				size += len(a.Text)
			}
		case *parse.IfNode:
			size += max(renderedBound(n.List, field, secret), renderedBound(n.ElseList, field, secret))
		}
	}
	return size
}
