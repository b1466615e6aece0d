// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Position is a place in a repository file. Line and Column are 1-based; a
// zero Line means the whole file.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func (p Position) String() string {
	switch {
	case p.File == "":
		return ""
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

func (p Position) compare(q Position) int {
	return cmp.Or(cmp.Compare(p.File, q.File), cmp.Compare(p.Line, q.Line), cmp.Compare(p.Column, q.Column))
}

// Error is one problem found in a repository, at a position and a CUE path.
type Error struct {
	Position
	// Path is the CUE path of the offending value, e.g.
	// fleets.train.workloads.pretrain.nodes; empty for file-level problems.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Also lists other places involved, such as the policy that was broken.
	Also []Position `json:"also,omitempty"`
	// guessed is set when CUE gave no position in the repository and the
	// closest written ancestor stands in.
	guessed bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if s := e.Position.String(); s != "" {
		b.WriteString(s)
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if len(e.Also) > 0 {
		b.WriteString(" (see ")
		for i, p := range e.Also {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.String())
		}
		b.WriteString(")")
	}
	return b.String()
}

// Errors is every problem found in a repository, sorted by position. Load
// returns it as its error so that callers can show all problems at once.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) sorted() Errors {
	// The same error found twice keeps its most precise position: a
	// written one over a guessed one, and within a file the deepest, which
	// is the value rather than the struct around it.
	best := map[[2]string]*Error{}
	for _, e := range es {
		key := [2]string{e.Path, e.Message}
		b := best[key]
		switch {
		case b == nil, b.guessed && !e.guessed:
			best[key] = e
		case b.guessed == e.guessed && b.File == e.File && e.Position.compare(b.Position) > 0:
			best[key] = e
		}
	}
	es = slices.DeleteFunc(es, func(e *Error) bool {
		b := best[[2]string{e.Path, e.Message}]
		return b != e && (b.File == e.File || e.guessed)
	})
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(a.Position.compare(b.Position), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
	})
	// CUE can describe one mistake several ways at the same place (a broken
	// policy, then the disjunction it left empty); the first, with a policy
	// preferred, says it best.
	out := es[:0]
	for _, e := range es {
		if n := len(out); n > 0 && out[n-1].Position == e.Position && out[n-1].Path == e.Path && e.Path != "" {
			if !strings.HasPrefix(out[n-1].Message, "breaks the policy") && strings.HasPrefix(e.Message, "breaks the policy") {
				out[n-1] = e
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// errorList collects problems as a load goes on.
type errorList struct{ errs Errors }

func (l *errorList) add(pos Position, path, format string, args ...any) {
	l.errs = append(l.errs, &Error{Position: pos, Path: path, Message: fmt.Sprintf(format, args...)})
}
