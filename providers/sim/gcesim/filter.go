// SPDX-License-Identifier: Apache-2.0

package gcesim

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// filter is the subset of GCE's list filter language that gpufleet, its
// operators and gcloud use: comparisons of a field (labels.KEY, status,
// name, operationGroupId…) by =, != or :* (a label is present), or by the
// older eq and ne, whose value is a regular expression the whole field
// must match (gcloud rewrites its --filter into these), joined by AND or
// juxtaposition, optionally parenthesised. Without OR every filter is a
// conjunction, so it is kept flat. Each list says which fields it has.
type filter []condition

// condition is one comparison. Label is set for labels.KEY fields.
type condition struct {
	Field string // "labels", or the field's name
	Label string
	Op    string // "=", "!=", ":*", "eq" or "ne"
	Value string
	// re is an eq or ne comparison's expression, anchored.
	re *regexp.Regexp
}

// matches reports whether an instance passes every condition; status is
// asked for only when a condition needs it, as it costs a look at the
// instance's operation.
func (f filter) matches(inst *sim.Instance, status func() string) bool {
	return f.match(func(c condition) (string, bool) {
		switch c.Field {
		case "labels":
			v, ok := inst.Tags[c.Label]
			return v, ok
		case "status":
			return status(), true
		}
		return inst.Name, true
	})
}

// only reports whether every condition compares one of fields, for
// resources that have no other.
func (f filter) only(fields ...string) bool {
	for _, c := range f {
		if !slices.Contains(fields, c.Field) {
			return false
		}
	}
	return true
}

// match reports whether a resource passes every condition, given the
// value of a condition's field and whether the resource has it.
func (f filter) match(value func(condition) (string, bool)) bool {
	for _, c := range f {
		v, present := value(c)
		switch c.Op {
		case ":*":
			if !present {
				return false
			}
		case "=":
			if !present || v != c.Value {
				return false
			}
		case "!=":
			if present && v == c.Value {
				return false
			}
		case "eq":
			if !present || !c.re.MatchString(v) {
				return false
			}
		case "ne":
			if present && c.re.MatchString(v) {
				return false
			}
		}
	}
	return true
}

// parseFilter parses a filter expression; ok is false for anything outside
// the subset, which GCE answers as an invalid list filter expression.
func parseFilter(expr string) (filter, bool) {
	tokens, ok := lex(expr)
	if !ok {
		return nil, false
	}
	p := &filterParser{tokens: tokens}
	f, ok := p.conjunction()
	if !ok || p.pos != len(p.tokens) {
		return nil, false
	}
	// GCE takes either syntax in a filter, not both.
	if f.regex() && slices.ContainsFunc(f, func(c condition) bool { return c.Op != "eq" && c.Op != "ne" }) {
		return nil, false
	}
	return f, true
}

// regex reports whether the filter compares by eq and ne.
func (f filter) regex() bool {
	return slices.ContainsFunc(f, func(c condition) bool { return c.Op == "eq" || c.Op == "ne" })
}

// token is a word, a quoted string or a piece of punctuation. A quoted
// string's raw text keeps its backslashes, which a regular expression
// needs.
type token struct {
	text, raw     string
	quoted, punct bool
}

func (t token) is(punct string) bool { return t.punct && t.text == punct }

func (t token) word() bool { return !t.quoted && !t.punct }

// lex splits a filter into words, quoted strings and the punctuation
// ( ) = != :
func lex(s string) ([]token, bool) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')' || c == '=' || c == ':':
			out = append(out, token{text: string(c), punct: true})
			i++
		case c == '!':
			if i+1 >= len(s) || s[i+1] != '=' {
				return nil, false
			}
			out = append(out, token{text: "!=", punct: true})
			i += 2
		case c == '"':
			var b, raw strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, false
				}
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					if s[i+1] != '"' {
						raw.WriteByte(s[i])
					}
					raw.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					i++
					break
				}
				b.WriteByte(s[i])
				raw.WriteByte(s[i])
				i++
			}
			out = append(out, token{text: b.String(), raw: raw.String(), quoted: true})
		default:
			start := i
			for i < len(s) && !strings.ContainsRune(" \t\n()=!:\"", rune(s[i])) {
				i++
			}
			out = append(out, token{text: s[start:i]})
		}
	}
	return out, true
}

type filterParser struct {
	tokens []token
	pos    int
}

func (p *filterParser) peek() (token, bool) {
	if p.pos >= len(p.tokens) {
		return token{}, false
	}
	return p.tokens[p.pos], true
}

func (p *filterParser) next() (token, bool) {
	t, ok := p.peek()
	if ok {
		p.pos++
	}
	return t, ok
}

// conjunction parses terms up to the end or a closing parenthesis.
func (p *filterParser) conjunction() (filter, bool) {
	var f filter
	for {
		t, ok := p.peek()
		if !ok || t.is(")") {
			return f, len(f) > 0
		}
		if len(f) > 0 && t.word() && t.text == "AND" {
			p.pos++
		}
		term, ok := p.term()
		if !ok {
			return nil, false
		}
		f = append(f, term...)
	}
}

func (p *filterParser) term() (filter, bool) {
	t, ok := p.next()
	if !ok {
		return nil, false
	}
	if t.is("(") {
		f, ok := p.conjunction()
		if closing, more := p.next(); !ok || !more || !closing.is(")") {
			return nil, false
		}
		return f, true
	}
	if !t.word() {
		return nil, false
	}
	c, ok := field(t.text)
	if !ok {
		return nil, false
	}
	op, ok := p.next()
	if !ok {
		return nil, false
	}
	value, ok := p.next()
	if !ok {
		return nil, false
	}
	switch {
	case op.is(":") && c.Field == "labels" && value.word() && value.text == "*":
		c.Op = ":*"
	case op.is("=") || op.is("!="):
		if !value.quoted && !plainValue(value) {
			return nil, false
		}
		c.Op, c.Value = op.text, value.text
	case op.word() && (op.text == "eq" || op.text == "ne"):
		expr := value.text
		if value.quoted {
			expr = value.raw
		} else if value.punct {
			return nil, false
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return nil, false
		}
		c.Op, c.Value, c.re = op.text, expr, re
	default:
		return nil, false
	}
	return filter{c}, true
}

// fieldRE is a field a list may be filtered on.
var fieldRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// field reads the left side of a comparison.
func field(name string) (condition, bool) {
	if key, ok := strings.CutPrefix(name, "labels."); ok {
		return condition{Field: "labels", Label: key}, labelKeyRE.MatchString(key)
	}
	return condition{Field: name}, fieldRE.MatchString(name) && name != "labels"
}

// plainValue is an unquoted value: a word that is not a keyword or a
// wildcard.
func plainValue(t token) bool {
	return t.word() && t.text != "AND" && t.text != "OR" && t.text != "NOT" && !strings.Contains(t.text, "*")
}
