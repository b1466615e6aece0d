// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// CUE evaluates without a bound of its own: list.Range(0, 300000000, 1)
// asks for 300 million values, and takes every byte of memory before an
// error could say so (its Repeat builtins and string multiplication stop
// at a million copies, of anything however large). So before evaluation
// the repository's files are read for the expressions that build values
// by a count they are given — list.Range, list.Repeat, strings.Repeat,
// bytes.Repeat, a string times a number, comprehensions, interpolations
// and concatenations — and the sizes they ask for are added up, each
// multiplied by the iterations of the comprehensions it is in, following
// fields and lets across the files. The bounds are far above what a fleet
// repository needs, which writes its lists out, and keep validation to
// seconds: CUE takes about a second for 10,000 generated values.
//
// What the files do not say cannot be counted: a comprehension over a
// value only evaluation gives (a selector such as fleets.x.workloads, a
// builtin's result) counts as one iteration, and a list of references
// ([a, a]) as its written elements. Those stay bounded by what CUE itself
// bounds.
const (
	// MaxGeneratedValues bounds the values one expression builds, list
	// elements or iterations of a comprehension.
	MaxGeneratedValues = 10_000
	// MaxGeneratedTotal bounds what every such expression in the
	// repository builds, together.
	MaxGeneratedTotal = 20_000
	// MaxGeneratedBytes bounds the bytes repeated, interpolated and
	// concatenated strings build, together.
	MaxGeneratedBytes = MaxFileSize
)

// A size or a number the files do not say is unknown. A builtin is
// refused when it is given one, for its size could be anything; a
// comprehension over one counts only the iterations that are known.
const unknown int64 = -1

// checkGrowth reports, with its position and field path, every expression
// of the files that would build more than the bounds, or whose size is
// given by a value the files do not say; false when it found one.
func checkGrowth(files []*ast.File, errs *errorList) bool {
	g := &growth{errs: errs, top: map[string][]ast.Expr{}, called: map[ast.Expr]bool{},
		sizes: map[ast.Node]int64{}, lengths: map[ast.Node]int64{}, numbers: map[ast.Node]*big.Rat{}}
	// A file refers to another's fields by name: those CUE's parser
	// leaves unresolved are found here.
	for _, f := range files {
		for _, d := range f.Decls {
			if field, ok := d.(*ast.Field); ok {
				if name, isIdent, err := ast.LabelName(field.Label); isIdent && err == nil {
					g.top[name] = append(g.top[name], field.Value)
				}
			}
		}
	}
	for _, f := range files {
		g.file(f)
	}
	return !g.failed
}

type growth struct {
	errs   *errorList
	failed bool
	// top is every file's top-level fields, by name.
	top map[string][]ast.Expr
	// values and bytes are what the expressions read so far build.
	values, bytes int64
	// called are the builtins seen as the function of a call.
	called map[ast.Expr]bool
	// path is the field labels down to the expression being read.
	path []string
	// times is how many times the expression being read is evaluated:
	// the product of the known iterations of the comprehensions it is in.
	times []int64
	// sizes, lengths and numbers remember what size, length and number
	// found, so that references followed many times are read once (a
	// chain of fields each doubling the last would otherwise take as long
	// to check as to build). A node being read is in them as unknown,
	// which ends a loop.
	sizes, lengths map[ast.Node]int64
	numbers        map[ast.Node]*big.Rat
}

// generators are the builtins whose result is sized by an argument.
var generators = map[string]bool{"list.Range": true, "list.Repeat": true, "strings.Repeat": true, "bytes.Repeat": true}

func (g *growth) file(f *ast.File) {
	g.path, g.times = nil, []int64{1}
	ast.Walk(f, g.before, g.after)
}

func (g *growth) before(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.Field:
		g.path = append(g.path, labelOf(n.Label))
	case *ast.Comprehension:
		g.times = append(g.times, g.now())
	case *ast.CallExpr:
		if name := g.builtin(n.Fun); generators[name] {
			g.called[n.Fun] = true
			g.call(name, n)
		}
	case *ast.SelectorExpr:
		if name := g.builtin(n); generators[name] && !g.called[n] {
			g.fail(n.Pos(), "%s can only be called where it is written, so that the size it builds is known before evaluation", name)
		}
	case *ast.BinaryExpr:
		switch n.Op {
		case token.MUL:
			g.multiply(n)
		case token.ADD:
			if built := addSat(g.length(n.X, 0), g.length(n.Y, 0)); built > 0 {
				g.addBytes(n.Pos(), "string concatenation", mul(g.now(), built))
			}
		}
	case *ast.Interpolation:
		// Its literal parts are written in the file; what it builds is
		// what it puts between them.
		var built int64
		for _, part := range n.Elts {
			if _, literal := part.(*ast.BasicLit); !literal {
				built = addSat(built, g.length(part, 0))
			}
		}
		if built > 0 {
			g.addBytes(n.Pos(), "an interpolation", mul(g.now(), built))
		}
	}
	return true
}

func (g *growth) after(n ast.Node) {
	switch n := n.(type) {
	case *ast.Field:
		g.path = g.path[:len(g.path)-1]
	case *ast.Comprehension:
		g.times = g.times[:len(g.times)-1]
	case *ast.ForClause:
		// The clauses after this one, and the comprehension's value, run
		// once for each of its iterations.
		runs := g.now()
		each := g.size(n.Source, 0)
		if each == unknown {
			return
		}
		g.times[len(g.times)-1] = mul(runs, each)
		g.add(n.Pos(), "a comprehension", mul(runs, each), "iterations")
	}
}

// now is how many times the expression being read is evaluated.
func (g *growth) now() int64 { return g.times[len(g.times)-1] }

// call checks one call of a generator.
func (g *growth) call(name string, call *ast.CallExpr) {
	arg := func(i int) (*big.Rat, bool) {
		if i >= len(call.Args) {
			return nil, false
		}
		return g.number(call.Args[i], 0)
	}
	written := func() {
		g.fail(call.Pos(), "%s is given a value the files do not write out; its arguments must be numbers (and, for Repeat, a list or a string) written in the repository's files, or fields holding them, so that the size it builds is known before evaluation", name)
	}
	switch name {
	case "list.Range":
		start, ok1 := arg(0)
		limit, ok2 := arg(1)
		step, ok3 := arg(2)
		if !ok1 || !ok2 || !ok3 {
			written()
			return
		}
		g.add(call.Pos(), name, mul(g.now(), rangeLen(start, limit, step)), "values")
	case "list.Repeat":
		count, ok := arg(1)
		each := unknown
		if len(call.Args) > 0 {
			each = g.size(call.Args[0], 0)
		}
		if !ok || each == unknown {
			written()
			return
		}
		g.add(call.Pos(), name, mul(g.now(), mul(each, ratInt(count))), "values")
	case "strings.Repeat", "bytes.Repeat":
		count, ok := arg(1)
		each := unknown
		if len(call.Args) > 0 {
			each = stringLen(call.Args[0])
		}
		if !ok || each == unknown {
			written()
			return
		}
		g.addBytes(call.Pos(), name, mul(g.now(), mul(each, ratInt(count))))
	}
}

// multiply checks a string or bytes literal times a count. A product of
// two references cannot be told from one of numbers, and is left alone.
func (g *growth) multiply(n *ast.BinaryExpr) {
	s, count := n.X, n.Y
	if stringLen(s) == unknown {
		s, count = n.Y, n.X
	}
	each := stringLen(s)
	if each == unknown {
		if _, interpolated := n.X.(*ast.Interpolation); interpolated {
			g.fail(n.Pos(), "an interpolated string multiplied: its length is not known before evaluation; repeat a string written out")
		} else if _, interpolated := n.Y.(*ast.Interpolation); interpolated {
			g.fail(n.Pos(), "an interpolated string multiplied: its length is not known before evaluation; repeat a string written out")
		}
		return
	}
	c, ok := g.number(count, 0)
	if !ok {
		g.fail(n.Pos(), "a string multiplied by a value the files do not write out; the count must be a number written in the repository's files, or a field holding one, so that the size it builds is known before evaluation")
		return
	}
	g.addBytes(n.Pos(), "string multiplication", mul(g.now(), mul(each, ratInt(c))))
}

func (g *growth) add(pos token.Pos, what string, n int64, unit string) {
	if n > MaxGeneratedValues {
		g.fail(pos, "%s would build %s %s; one expression may build at most %d, and the repository's %d in all", what, count(n), unit, MaxGeneratedValues, MaxGeneratedTotal)
		return
	}
	before := g.values
	g.values = addSat(g.values, n)
	if g.values > MaxGeneratedTotal && before <= MaxGeneratedTotal {
		g.fail(pos, "%s would take what the repository's expressions build to %s values and iterations; at most %d are built in all", what, count(g.values), MaxGeneratedTotal)
	}
}

func (g *growth) addBytes(pos token.Pos, what string, n int64) {
	before := g.bytes
	g.bytes = addSat(g.bytes, n)
	if g.bytes > MaxGeneratedBytes && before <= MaxGeneratedBytes {
		g.fail(pos, "%s would take the strings the repository repeats to %s bytes; at most %d bytes are built in all", what, count(g.bytes), MaxGeneratedBytes)
	}
}

func (g *growth) fail(pos token.Pos, format string, args ...any) {
	g.failed = true
	g.errs.add(position(pos), strings.Join(g.path, "."), format, args...)
}

// builtin is "list.Range" and the like for a selector of an imported
// standard package, "" for anything else.
func (g *growth) builtin(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	// CUE's parser resolves an imported package's name, under an alias
	// too, to its import, in whichever file the expression is.
	spec, ok := pkg.Node.(*ast.ImportSpec)
	if !ok {
		return ""
	}
	path, err := strconv.Unquote(spec.Path.Value)
	if err != nil {
		return ""
	}
	name, ok := sel.Sel.(*ast.Ident)
	if !ok {
		return ""
	}
	return path + "." + name.Name
}

// count writes a size for a message; one that saturated is "more than".
func count(n int64) string {
	if n == math.MaxInt64 {
		return fmt.Sprintf("more than %d", int64(math.MaxInt64))
	}
	return strconv.FormatInt(n, 10)
}

// labelOf is a field's label as a path element.
func labelOf(l ast.Label) string {
	switch l := l.(type) {
	case *ast.Ident:
		return l.Name
	case *ast.BasicLit:
		if s, err := literal.Unquote(l.Value); err == nil {
			return s
		}
	case *ast.ListLit:
		return "[_]"
	case *ast.Alias:
		if e, ok := l.Expr.(ast.Label); ok {
			return labelOf(e)
		}
	}
	return "(…)"
}
