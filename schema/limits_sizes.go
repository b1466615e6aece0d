// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"math"
	"math/big"
	"slices"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// What an expression's size, length or number is, as far as the
// repository's files say without evaluating them, for checkGrowth.

// maxDepth bounds how deep a size or a number is followed through
// references and the expressions they name; beyond it, one is unknown.
const maxDepth = 1000

// size is how many elements a list, fields a struct, or values a
// generator call has; unknown when the file does not say.
func (g *growth) size(e ast.Expr, depth int) int64 {
	if e == nil || depth > maxDepth {
		return unknown
	}
	if n, ok := g.sizes[e]; ok {
		return n
	}
	g.sizes[e] = unknown
	n := g.sizeOf(e, depth)
	g.sizes[e] = n
	return n
}

func (g *growth) sizeOf(e ast.Expr, depth int) int64 {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return g.size(e.X, depth+1)
	case *ast.Ident:
		var most int64 = unknown
		for _, t := range g.targets(e) {
			most = max(most, g.size(t, depth+1))
		}
		return most
	case *ast.ListLit:
		return elements(g, e.Elts, depth, false)
	case *ast.StructLit:
		return elements(g, e.Elts, depth, true)
	case *ast.CallExpr:
		switch g.builtin(e.Fun) {
		case "list.Range":
			if len(e.Args) != 3 {
				return unknown
			}
			start, ok1 := g.number(e.Args[0], depth+1)
			limit, ok2 := g.number(e.Args[1], depth+1)
			step, ok3 := g.number(e.Args[2], depth+1)
			if !ok1 || !ok2 || !ok3 {
				return unknown
			}
			return rangeLen(start, limit, step)
		case "list.Repeat":
			if len(e.Args) != 2 {
				return unknown
			}
			each := g.size(e.Args[0], depth+1)
			count, ok := g.number(e.Args[1], depth+1)
			if each == unknown || !ok {
				return unknown
			}
			return mul(each, ratInt(count))
		}
	}
	return unknown
}

// elements counts the elements of a list or, with fields, the fields of a
// struct, those its comprehensions make included.
func elements[T ast.Node](g *growth, elts []T, depth int, fields bool) int64 {
	var n int64
	for _, elt := range elts {
		switch elt := ast.Node(elt).(type) {
		case *ast.Comprehension:
			each := int64(1)
			for _, c := range elt.Clauses {
				if f, ok := c.(*ast.ForClause); ok {
					s := g.size(f.Source, depth+1)
					if s == unknown {
						return unknown
					}
					each = mul(each, s)
				}
			}
			// An iteration adds one element to a list, and its fields
			// to a struct.
			inner := int64(1)
			if s, ok := elt.Value.(*ast.StructLit); ok && fields {
				inner = elements(g, s.Elts, depth+1, true)
				if inner == unknown {
					return unknown
				}
			}
			n = addSat(n, mul(each, inner))
		case *ast.Ellipsis, *ast.Attribute, *ast.CommentGroup, *ast.LetClause:
		default:
			n = addSat(n, 1)
		}
	}
	return n
}

// number is the value of a constant numeric expression: literals, the
// arithmetic of literals, and references within the file to fields and
// lets whose value is one.
func (g *growth) number(e ast.Expr, depth int) (*big.Rat, bool) {
	if e == nil || depth > maxDepth {
		return nil, false
	}
	if n, ok := g.numbers[e]; ok {
		return copyRat(n)
	}
	g.numbers[e] = nil
	n, ok := g.numberOf(e, depth)
	// A number of hundreds of digits is no count a repository writes, and
	// arithmetic on numbers squared over and over would take the time
	// this check saves: past maxBits a number stands for any as large.
	if ok && (n.Num().BitLen() > maxBits || n.Denom().BitLen() > maxBits) {
		huge := new(big.Int).Lsh(big.NewInt(1), maxBits)
		if n.Sign() < 0 {
			huge.Neg(huge)
		}
		if n.Num().BitLen()-n.Denom().BitLen() < maxBits/2 {
			// Tiny rather than huge: a step this small is as bad.
			n = new(big.Rat).SetFrac(big.NewInt(int64(n.Sign())), huge.Abs(huge))
		} else {
			n = new(big.Rat).SetInt(huge)
		}
	}
	if ok {
		g.numbers[e] = new(big.Rat).Set(n)
	}
	return n, ok
}

// maxBits bounds the numbers number works with.
const maxBits = 256

func copyRat(r *big.Rat) (*big.Rat, bool) {
	if r == nil {
		return nil, false
	}
	return new(big.Rat).Set(r), true
}

func (g *growth) numberOf(e ast.Expr, depth int) (*big.Rat, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.INT && e.Kind != token.FLOAT {
			return nil, false
		}
		var info literal.NumInfo
		if err := literal.ParseNum(e.Value, &info); err != nil {
			return nil, false
		}
		return new(big.Rat).SetString(info.String())
	case *ast.ParenExpr:
		return g.number(e.X, depth+1)
	case *ast.Ident:
		for _, t := range g.targets(e) {
			if n, ok := g.number(t, depth+1); ok {
				return n, true
			}
		}
		return nil, false
	case *ast.UnaryExpr:
		x, ok := g.number(e.X, depth+1)
		switch {
		case !ok:
			return nil, false
		case e.Op == token.SUB:
			return x.Neg(x), true
		case e.Op == token.ADD:
			return x, true
		}
	case *ast.BinaryExpr:
		x, ok1 := g.number(e.X, depth+1)
		y, ok2 := g.number(e.Y, depth+1)
		if !ok1 || !ok2 {
			return nil, false
		}
		switch e.Op {
		case token.ADD:
			return x.Add(x, y), true
		case token.SUB:
			return x.Sub(x, y), true
		case token.MUL:
			return x.Mul(x, y), true
		case token.QUO:
			if y.Sign() == 0 {
				return nil, false
			}
			return x.Quo(x, y), true
		}
	}
	return nil, false
}

// targets are the expressions an identifier refers to: a field's value
// or a let's in its file, as CUE's parser resolved it, or the values of a
// top-level field of the package; none for anything else (a
// comprehension's variable, a builtin). A field declared several times is
// all of its declarations, which unify.
func (g *growth) targets(id *ast.Ident) []ast.Expr {
	if e, ok := id.Node.(ast.Expr); ok && slices.Contains(g.top[id.Name], e) {
		return g.top[id.Name]
	}
	switch n := id.Node.(type) {
	case nil:
		if id.Scope == nil {
			return g.top[id.Name]
		}
	case *ast.Field:
		return []ast.Expr{n.Value}
	case *ast.LetClause:
		return []ast.Expr{n.Expr}
	case *ast.Ident:
		// A comprehension's variable.
	case ast.Expr:
		return []ast.Expr{n}
	}
	return nil
}

// length is at least how long a string an expression makes is: what its
// literals, interpolations, concatenations and repeats say, following
// references; 0 for what they do not say. A string is never shorter than
// length says, so a length over the bound is one.
func (g *growth) length(e ast.Expr, depth int) int64 {
	if e == nil || depth > maxDepth {
		return 0
	}
	if n, ok := g.lengths[e]; ok {
		return n
	}
	g.lengths[e] = 0
	n := g.lengthOf(e, depth)
	g.lengths[e] = n
	return n
}

func (g *growth) lengthOf(e ast.Expr, depth int) int64 {
	switch e := e.(type) {
	case *ast.BasicLit:
		return max(0, stringLen(e))
	case *ast.ParenExpr:
		return g.length(e.X, depth+1)
	case *ast.Ident:
		var most int64
		for _, t := range g.targets(e) {
			most = max(most, g.length(t, depth+1))
		}
		return most
	case *ast.Interpolation:
		var n int64
		for _, part := range e.Elts {
			n = addSat(n, g.length(part, depth+1))
		}
		return n
	case *ast.BinaryExpr:
		switch e.Op {
		case token.ADD:
			return addSat(g.length(e.X, depth+1), g.length(e.Y, depth+1))
		case token.MUL:
			s, count := e.X, e.Y
			if g.length(s, depth+1) == 0 {
				s, count = e.Y, e.X
			}
			if c, ok := g.number(count, depth+1); ok {
				return mul(g.length(s, depth+1), ratInt(c))
			}
		}
	case *ast.CallExpr:
		if name := g.builtin(e.Fun); (name == "strings.Repeat" || name == "bytes.Repeat") && len(e.Args) == 2 {
			if c, ok := g.number(e.Args[1], depth+1); ok {
				return mul(g.length(e.Args[0], depth+1), ratInt(c))
			}
		}
	}
	return 0
}

// stringLen is the length of a string or bytes literal without
// interpolation; unknown for anything else.
func stringLen(e ast.Expr) int64 {
	if p, ok := e.(*ast.ParenExpr); ok {
		return stringLen(p.X)
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return unknown
	}
	s, err := literal.Unquote(lit.Value)
	if err != nil {
		return unknown
	}
	return int64(len(s))
}

// rangeLen is how many values list.Range(start, limit, step) gives.
func rangeLen(start, limit, step *big.Rat) int64 {
	if step.Sign() == 0 || new(big.Rat).Sub(limit, start).Sign() != step.Sign() {
		return 0
	}
	n := new(big.Rat).Quo(new(big.Rat).Sub(limit, start), step)
	// Ceiling: the values are start, start+step, … while before limit.
	q, r := new(big.Int).QuoRem(n.Num(), n.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// ratInt is a count as an integer, at least 0; a fraction counts whole.
func ratInt(r *big.Rat) int64 {
	if r.Sign() <= 0 {
		return 0
	}
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// mul and addSat saturate at math.MaxInt64, so a product of huge counts
// stays over every bound rather than wrapping.
func mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
