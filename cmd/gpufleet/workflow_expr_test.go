// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The GitHub Actions expressions the example workflows use, and no more:
// the harness that runs them evaluates `${{ … }}` with this, and anything
// it does not know — a function, an operator, a context, a step id — is an
// error, so that a workflow the harness cannot follow fails its test
// instead of running something else than GitHub would.

// exprContext is what an expression can read: the contexts by name
// (github, env, inputs, steps, runner, secrets) and the job's status for
// success(), failure() and always().
type exprContext struct {
	contexts map[string]any
	failed   bool
}

// strictMap is a context object whose missing keys are errors rather than
// null: a step id, an input or a secret the harness was not given is a
// mistake in the workflow or in the test, where GitHub would quietly give
// null.
type strictMap map[string]any

// interpolate replaces every `${{ expr }}` in s with the value of expr as
// a string, as GitHub does in with:, env:, run: and the action's defaults.
func (c *exprContext) interpolate(s string) (string, error) {
	var out strings.Builder
	for {
		open := strings.Index(s, "${{")
		if open < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		end := strings.Index(s[open:], "}}")
		if end < 0 {
			return "", fmt.Errorf("%q: an expression with no closing }}", s)
		}
		v, err := c.eval(s[open+3 : open+end])
		if err != nil {
			return "", err
		}
		out.WriteString(s[:open])
		out.WriteString(exprString(v))
		s = s[open+end+2:]
	}
}

// statusCall finds a status function, whose presence stops GitHub from
// adding its implicit success() to an if: condition.
var statusCall = regexp.MustCompile(`\b(always|success|failure|cancelled)\s*\(`)

// condition evaluates an if: as GitHub does: `${{ }}` around it is
// optional, empty means success(), and a condition that calls no status
// function holds only while no step has failed.
func (c *exprContext) condition(cond string) (bool, error) {
	cond = strings.TrimSpace(cond)
	if strings.HasPrefix(cond, "${{") && strings.HasSuffix(cond, "}}") && strings.Count(cond, "${{") == 1 {
		cond = cond[3 : len(cond)-2]
	}
	if strings.TrimSpace(cond) == "" {
		cond = "success()"
	}
	if !statusCall.MatchString(cond) {
		cond = "success() && (" + cond + ")"
	}
	v, err := c.eval(cond)
	if err != nil {
		return false, err
	}
	return exprTruthy(v), nil
}

func (c *exprContext) eval(src string) (any, error) {
	p := &exprParser{src: src, ctx: c}
	p.next()
	v, err := p.or()
	if err == nil && p.tok.kind != tokEnd {
		err = fmt.Errorf("unexpected %q", p.tok.text)
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", strings.TrimSpace(src), err)
	}
	return v, nil
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokName
	tokString
	tokNumber
	tokOp
)

type exprToken struct {
	kind tokKind
	text string
}

type exprParser struct {
	src string
	pos int
	tok exprToken
	ctx *exprContext
	err error
}

// exprOps are the operators the harness evaluates, longest first; GitHub
// has more (<, >, <=, >=, [ ], *) and those are errors here.
var exprOps = []string{"==", "!=", "&&", "||", "!", "(", ")", ".", ","}

func (p *exprParser) next() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	if p.pos == len(p.src) {
		p.tok = exprToken{kind: tokEnd}
		return
	}
	rest := p.src[p.pos:]
	switch ch := rest[0]; {
	case ch == '\'':
		var s strings.Builder
		for i := 1; i < len(rest); i++ {
			if rest[i] != '\'' {
				s.WriteByte(rest[i])
				continue
			}
			if i+1 < len(rest) && rest[i+1] == '\'' {
				s.WriteByte('\'')
				i++
				continue
			}
			p.pos += i + 1
			p.tok = exprToken{kind: tokString, text: s.String()}
			return
		}
		p.fail(fmt.Errorf("a string with no closing quote"))
	case ch >= '0' && ch <= '9' || ch == '-' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
		n := regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?`).FindString(rest)
		p.pos += len(n)
		p.tok = exprToken{kind: tokNumber, text: n}
	case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
		// Names have dashes in them: steps.find.outputs.run-id.
		n := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*`).FindString(rest)
		p.pos += len(n)
		p.tok = exprToken{kind: tokName, text: n}
	default:
		for _, op := range exprOps {
			if strings.HasPrefix(rest, op) {
				p.pos += len(op)
				p.tok = exprToken{kind: tokOp, text: op}
				return
			}
		}
		p.fail(fmt.Errorf("%q is not an operator this harness evaluates", rest[:1]))
	}
}

func (p *exprParser) fail(err error) {
	if p.err == nil {
		p.err = err
	}
	p.pos = len(p.src)
	p.tok = exprToken{kind: tokEnd}
}

func (p *exprParser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.text == op }

// or, and, compare, unary and primary are the grammar, loosest first. The
// logical operators return one of their operands, as GitHub's do.
func (p *exprParser) or() (any, error) {
	left, err := p.and()
	for err == nil && p.isOp("||") {
		p.next()
		var right any
		right, err = p.and()
		if !exprTruthy(left) {
			left = right
		}
	}
	return left, cmpErr(err, p.err)
}

func (p *exprParser) and() (any, error) {
	left, err := p.compare()
	for err == nil && p.isOp("&&") {
		p.next()
		var right any
		right, err = p.compare()
		if exprTruthy(left) {
			left = right
		}
	}
	return left, cmpErr(err, p.err)
}

func (p *exprParser) compare() (any, error) {
	left, err := p.unary()
	if err != nil || !(p.isOp("==") || p.isOp("!=")) {
		return left, cmpErr(err, p.err)
	}
	op := p.tok.text
	p.next()
	right, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.isOp("==") || p.isOp("!=") {
		return nil, fmt.Errorf("chained comparisons: add parentheses")
	}
	return exprEqual(left, right) == (op == "=="), p.err
}

func (p *exprParser) unary() (any, error) {
	if p.isOp("!") {
		p.next()
		v, err := p.unary()
		return !exprTruthy(v), err
	}
	return p.primary()
}

func (p *exprParser) primary() (any, error) {
	tok := p.tok
	p.next()
	switch tok.kind {
	case tokString:
		return tok.text, p.err
	case tokNumber:
		n, err := strconv.ParseFloat(tok.text, 64)
		return n, cmpErr(err, p.err)
	case tokOp:
		if tok.text != "(" {
			return nil, fmt.Errorf("unexpected %q", tok.text)
		}
		v, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.isOp(")") {
			return nil, fmt.Errorf("no closing parenthesis")
		}
		p.next()
		return v, p.err
	case tokName:
		switch tok.text {
		case "true", "false":
			return tok.text == "true", p.err
		case "null":
			return nil, p.err
		}
		if p.isOp("(") {
			return p.call(tok.text)
		}
		return p.property(tok.text)
	}
	return nil, cmpErr(fmt.Errorf("the expression ends early"), p.err)
}

// call evaluates the status functions; GitHub's others (contains,
// format, toJSON, hashFiles, …) are errors here.
func (p *exprParser) call(name string) (any, error) {
	p.next()
	if !p.isOp(")") {
		return nil, fmt.Errorf("%s() with arguments is not evaluated by this harness", name)
	}
	p.next()
	switch name {
	case "always":
		return true, p.err
	case "success":
		return !p.ctx.failed, p.err
	case "failure":
		return p.ctx.failed, p.err
	case "cancelled":
		return false, p.err
	}
	return nil, fmt.Errorf("the function %s() is not evaluated by this harness", name)
}

// property reads a dotted path from the contexts: a missing key is null,
// as in GitHub, except in a strictMap and for the contexts themselves.
func (p *exprParser) property(name string) (any, error) {
	v, ok := p.ctx.contexts[name]
	if !ok {
		return nil, fmt.Errorf("the context %q is not one this harness has", name)
	}
	path := name
	for p.isOp(".") {
		p.next()
		if p.tok.kind != tokName {
			return nil, fmt.Errorf("%s. is not followed by a name", path)
		}
		key := p.tok.text
		p.next()
		switch m := v.(type) {
		case strictMap:
			var ok bool
			if v, ok = m[key]; !ok {
				return nil, fmt.Errorf("%s has no %q", path, key)
			}
		case map[string]any:
			v = m[key]
		case map[string]string:
			s, ok := m[key]
			v = any(nil)
			if ok {
				v = s
			}
		default:
			v = nil
		}
		path += "." + key
	}
	if p.isOp("(") || p.isOp(",") {
		return nil, fmt.Errorf("unexpected %q after %s", p.tok.text, path)
	}
	return v, p.err
}

func cmpErr(err, parseErr error) error {
	if err != nil {
		return err
	}
	return parseErr
}

// exprTruthy is GitHub's truthiness: false, 0, NaN, ” and null are
// false.
func exprTruthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// exprEqual is GitHub's ==: strings compare ignoring case, and values of
// different types are compared as numbers.
func exprEqual(a, b any) bool {
	switch a := a.(type) {
	case string:
		if b, ok := b.(string); ok {
			return strings.EqualFold(a, b)
		}
	case bool:
		if b, ok := b.(bool); ok {
			return a == b
		}
	case nil:
		if b == nil {
			return true
		}
	}
	if isObject(a) || isObject(b) {
		return false
	}
	return exprNumber(a) == exprNumber(b)
}

func isObject(v any) bool {
	switch v.(type) {
	case nil, bool, float64, string:
		return false
	}
	return true
}

func exprNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		if strings.TrimSpace(v) == "" {
			return 0
		}
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return n
		}
	}
	return math.NaN()
}

// exprString is how a value reads in a string: null is empty.
func exprString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func TestWorkflowExpressions(t *testing.T) {
	ctx := &exprContext{contexts: map[string]any{
		"github": strictMap{
			"token": "ghs_x",
			"event": map[string]any{"pull_request": map[string]any{"merged": true, "number": float64(7), "base": map[string]any{"ref": "main"}}},
		},
		"env":   map[string]string{"PLAN_FAILED": "true"},
		"steps": strictMap{"find": map[string]any{"outputs": map[string]string{"run-id": "41"}}},
	}}
	tests := []struct {
		name, in, want string
	}{
		{"a property", "${{ github.event.pull_request.base.ref }}", "main"},
		{"text around", "gpufleet-plan-${{ github.event.pull_request.number }}", "gpufleet-plan-7"},
		{"a dashed output", "${{ steps.find.outputs.run-id }}", "41"},
		{"a missing output is empty", "${{ steps.find.outputs.other }}", ""},
		{"a bool", "${{ github.event.pull_request.merged == true }}", "true"},
		{"strings ignore case", "${{ env.PLAN_FAILED == 'TRUE' }}", "true"},
		{"mixed types compare as numbers", "${{ github.event.pull_request.number == '7' }}", "true"},
		{"&& returns an operand", "${{ env.MISSING && 'x' }}", ""},
		{"|| returns an operand", "${{ env.MISSING || 'fallback' }}", "fallback"},
		{"a quote in a string", "${{ 'it''s' }}", "it's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ctx.interpolate(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("interpolate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	conditions := []struct {
		cond   string
		failed bool
		want   bool
	}{
		{"env.PLAN_FAILED != 'true'", false, false},
		{"steps.find.outputs.run-id == '41'", false, true},
		{"steps.find.outputs.run-id == '41'", true, false}, // the implicit success()
		{"always()", true, true},
		{"${{ failure() }}", true, true},
		{"", false, true},
		{"!(env.PLAN_FAILED == 'true')", false, false},
	}
	for _, tt := range conditions {
		ctx.failed = tt.failed
		if got, err := ctx.condition(tt.cond); err != nil || got != tt.want {
			t.Errorf("if: %q after a failure %v = %v, %v; want %v", tt.cond, tt.failed, got, err, tt.want)
		}
	}
	ctx.failed = false
	for _, bad := range []string{
		"${{ matrix.os }}",                            // a context the harness does not have
		"${{ steps.plam.outputs.changes }}",           // a step that is not there
		"${{ contains(github.token, 'x') }}",          // a function it does not evaluate
		"${{ github.event.pull_request.number > 6 }}", // an operator it does not evaluate
		"${{ github.evnt.pull_request }}",
		"${{ 'open }}",
		"${{ github.token",
		"${{ 'a' == 'b' == 'c' }}",
	} {
		if got, err := ctx.interpolate(bad); err == nil {
			t.Errorf("interpolate(%q) = %q, want an error", bad, got)
		}
	}
}
