package gcesim

import (
	"strings"

	"github.com/gpufleet/gpufleet/providers/sim"
)

// filter is the subset of GCE's list filter language that gpufleet and its
// operators use: comparisons of labels.KEY, status and name, joined by AND
// or juxtaposition, optionally parenthesised. Without OR every filter is a
// conjunction, so it is kept flat.
type filter []condition

// condition is one comparison. Label is set for labels.KEY fields.
type condition struct {
	Field string // "labels", "status" or "name"
	Label string
	Op    string // "=", "!=" or ":*" (the label is present)
	Value string
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

// only reports whether every condition compares one field, for resources
// that have no other.
func (f filter) only(field string) bool {
	for _, c := range f {
		if c.Field != field {
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
	return f, true
}

// token is a word, a quoted string or a piece of punctuation.
type token struct {
	text          string
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
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, false
				}
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			out = append(out, token{text: b.String(), quoted: true})
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
	default:
		return nil, false
	}
	return filter{c}, true
}

// field reads the left side of a comparison.
func field(name string) (condition, bool) {
	if key, ok := strings.CutPrefix(name, "labels."); ok {
		return condition{Field: "labels", Label: key}, labelKeyRE.MatchString(key)
	}
	switch name {
	case "status", "name":
		return condition{Field: name}, true
	}
	return condition{}, false
}

// plainValue is an unquoted value: a word that is not a keyword or a
// wildcard.
func plainValue(t token) bool {
	return t.word() && t.text != "AND" && t.text != "OR" && t.text != "NOT" && !strings.Contains(t.text, "*")
}
