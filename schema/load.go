// SPDX-License-Identifier: Apache-2.0

package schema

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/gpufleet/gpufleet/schema/catalog"
)

// ImportPath is the CUE import path of the schema, for repositories that
// check themselves with `cue vet`.
const ImportPath = "gpufleet.dev/schema"

// PackageName is the CUE package every repository file declares.
const PackageName = "gpufleet"

//go:embed schema.cue
var schemaSource []byte

// Source returns the CUE schema, for `gpufleet schema` and for vendoring
// into a repository's cue.mod.
func Source() []byte { return slices.Clone(schemaSource) }

const schemaFile = ImportPath + "/schema.cue"

// Load reads the repository in dir, checks it against the schema and the
// embedded catalog, and returns it with defaults applied. On failure the
// error is an Errors holding every problem found, sorted by position.
func Load(dir string) (*Repo, error) {
	return LoadWithCatalog(dir, catalog.Default())
}

// LoadWithCatalog is Load with the regions and GPU models of cat.
func LoadWithCatalog(dir string, cat *catalog.Catalog) (*Repo, error) {
	l := &loader{dir: dir, cat: cat}
	repo := l.load()
	if len(l.errs.errs) > 0 {
		return nil, l.errs.errs.sorted()
	}
	return repo, nil
}

type loader struct {
	dir  string
	cat  *catalog.Catalog
	errs errorList
	// fleetDecl is where each fleet name is first declared in fleets/.
	fleetDecl    map[string]Position
	workloadDecl map[[2]string]Position
	// read is every file read, by name.
	read map[string]ReadFile
}

// noteRead records a file the load read.
func (l *loader) noteRead(name, resolved string, src []byte) {
	if l.read == nil {
		l.read = map[string]ReadFile{}
	}
	if resolved == name {
		resolved = ""
	}
	sum := sha256.Sum256(src)
	l.read[name] = ReadFile{Name: name, Resolved: resolved, SHA256: hex.EncodeToString(sum[:])}
}

func (l *loader) load() *Repo {
	files := readRepo(l.dir, &l.errs)
	repo := &Repo{Dir: l.dir}
	defer func() {
		for _, name := range slices.Sorted(maps.Keys(l.read)) {
			repo.Read = append(repo.Read, l.read[name])
		}
	}()
	var syntax []*ast.File
	for _, f := range files {
		l.noteRead(f.name, f.resolved, f.src)
		repo.Files = append(repo.Files, f.name)
		if file := l.parse(f); file != nil {
			syntax = append(syntax, file)
		}
	}
	if len(syntax) == 0 || !slices.Contains(repo.Files, ConfigFile) || !checkGrowth(syntax, &l.errs) {
		return repo
	}
	l.findDuplicateFleets(syntax)

	ctx := cuecontext.New()
	value, ok := l.build(ctx, syntax)
	if !ok {
		return repo
	}
	l.validate(value)
	l.decode(value, repo)
	return repo
}

// validate reports every CUE error. CUE stops descending into a struct
// after some errors (a failed comprehension in a policy, say), so each fleet
// is validated on its own as well; duplicates are dropped when sorting.
func (l *loader) validate(value cue.Value) {
	if err := value.Validate(cue.Concrete(true), cue.All()); err != nil {
		l.addCUEErrors(value, err)
	}
	iter, err := value.LookupPath(cue.ParsePath("fleets")).Fields()
	if err != nil {
		return
	}
	for iter.Next() {
		if err := iter.Value().Validate(cue.Concrete(true), cue.All()); err != nil {
			l.addCUEErrors(value, err)
		}
	}
}

// parse parses one file and checks what CUE alone does not: the package
// clause and the imports a repository may use.
func (l *loader) parse(f sourceFile) *ast.File {
	file, err := parser.ParseFile(f.name, f.src)
	if err != nil {
		l.addCUEErrors(cue.Value{}, err)
		return nil
	}
	if name := file.PackageName(); name != PackageName {
		pos := Position{File: f.name, Line: 1, Column: 1}
		for _, d := range file.Decls {
			if pkg, ok := d.(*ast.Package); ok {
				pos = position(pkg.Pos())
			}
		}
		found := "none"
		if name != "" {
			found = strconv.Quote(name)
		}
		l.errs.add(pos, "", "every repository file declares `package %s` (found %s)", PackageName, found)
		return nil
	}
	ok := true
	for spec := range file.ImportSpecs() {
		path, _ := strconv.Unquote(spec.Path.Value)
		if path != ImportPath && strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
			l.errs.add(position(spec.Pos()), "", "cannot import %q: a repository may import only the CUE standard library and %q", path, ImportPath)
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return file
}

// build unifies the repository's files, as one CUE package, with
// #Repository.
func (l *loader) build(ctx *cue.Context, syntax []*ast.File) (cue.Value, bool) {
	schemaInst, err := schemaInstance()
	if err != nil {
		panic(fmt.Sprintf("the embedded schema does not parse: %v", err))
	}
	bctx := build.NewContext()
	inst := bctx.NewInstance(l.dir, func(_ token.Pos, path string) *build.Instance {
		if path == ImportPath {
			return schemaInst
		}
		return nil // the standard library resolves by itself
	})
	for _, f := range syntax {
		if err := inst.AddSyntax(f); err != nil {
			l.addCUEErrors(cue.Value{}, err)
			return cue.Value{}, false
		}
	}
	user := ctx.BuildInstance(inst)
	if err := user.Err(); err != nil {
		// A conflict inside the repository's own files, such as a policy
		// clashing with a fleet, surfaces here; validation goes on so that
		// the other fleets' problems are found too.
		l.addCUEErrors(cue.Value{}, err)
		if !user.Exists() {
			return cue.Value{}, false
		}
	}
	defs := ctx.BuildInstance(schemaInst)
	if err := defs.Err(); err != nil {
		panic(fmt.Sprintf("the embedded schema does not build: %v", err))
	}
	return defs.LookupPath(cue.MakePath(cue.Def("Repository"))).Unify(user), true
}

func schemaInstance() (*build.Instance, error) {
	file, err := parser.ParseFile(schemaFile, schemaSource, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	inst := build.NewContext().NewInstance("", nil)
	inst.ImportPath = ImportPath
	if err := inst.AddSyntax(file); err != nil {
		return nil, err
	}
	return inst, nil
}

// findDuplicateFleets reports a fleet declared in two files of fleets/.
// CUE would silently merge the two declarations; across files that is
// almost always a copy-paste mistake. It also records where each fleet and
// workload is declared, for positions CUE cannot give.
func (l *loader) findDuplicateFleets(files []*ast.File) {
	l.fleetDecl = map[string]Position{}
	l.workloadDecl = map[[2]string]Position{}
	for _, file := range files {
		if !strings.HasPrefix(file.Filename, FleetsDir+"/") {
			continue
		}
		seen := map[string]bool{}
		for _, fleets := range namedFields(file.Decls, "fleets") {
			for _, fleet := range fieldsOf(fleets.Value) {
				name := labelName(fleet.Label)
				if name == "" {
					continue
				}
				for _, workloads := range namedFields(fieldsOfDecls(fleet.Value), "workloads") {
					for _, w := range fieldsOf(workloads.Value) {
						key := [2]string{name, labelName(w.Label)}
						if _, ok := l.workloadDecl[key]; !ok && key[1] != "" {
							l.workloadDecl[key] = position(w.Label.Pos())
						}
					}
				}
				if seen[name] {
					continue
				}
				seen[name] = true
				pos := position(fleet.Label.Pos())
				if first, dup := l.fleetDecl[name]; dup {
					l.errs.errs = append(l.errs.errs, &Error{
						Position: pos,
						Path:     "fleets." + name,
						Message:  fmt.Sprintf("fleet %q is defined in another file too", name),
						Also:     []Position{first},
					})
					continue
				}
				l.fleetDecl[name] = pos
			}
		}
	}
}

// namedFields returns the fields among decls with a given label.
func namedFields(decls []ast.Decl, name string) []*ast.Field {
	var out []*ast.Field
	for _, d := range decls {
		if f, ok := d.(*ast.Field); ok && labelName(f.Label) == name {
			out = append(out, f)
		}
	}
	return out
}

// fieldsOf returns the fields of a struct literal; `a: b: c` is a struct
// literal holding b.
func fieldsOf(expr ast.Expr) []*ast.Field {
	var out []*ast.Field
	for _, d := range fieldsOfDecls(expr) {
		if f, ok := d.(*ast.Field); ok {
			out = append(out, f)
		}
	}
	return out
}

func fieldsOfDecls(expr ast.Expr) []ast.Decl {
	if s, ok := expr.(*ast.StructLit); ok {
		return s.Elts
	}
	return nil
}

// labelName returns a field label's name, or "" for pattern and dynamic
// labels.
func labelName(label ast.Label) string {
	switch label := label.(type) {
	case *ast.Ident:
		return label.Name
	case *ast.BasicLit:
		if s, err := strconv.Unquote(label.Value); err == nil {
			return s
		}
	}
	return ""
}

func position(p token.Pos) Position {
	if !p.IsValid() {
		return Position{}
	}
	return Position{File: p.Filename(), Line: p.Line(), Column: p.Column()}
}

func cuePath(path []string) cue.Path {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		if n, err := strconv.Atoi(p); err == nil {
			sels[i] = cue.Index(n)
		} else {
			sels[i] = cue.Str(p)
		}
	}
	return cue.MakePath(sels...)
}

func pathString(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch {
		case isIndex(p):
			b.WriteString("[" + p + "]")
			continue
		case i > 0:
			b.WriteString(".")
		}
		if ast.IsValidIdent(p) || strings.HasPrefix(p, "\"") {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// decode fills repo from the unified value. Values with errors were
// already reported by Validate and are skipped.
func (l *loader) decode(value cue.Value, repo *Repo) {
	cfgValue := value.LookupPath(cue.ParsePath("gpufleet"))
	cfgOK := cfgValue.Decode(&repo.Config) == nil
	if cfgOK {
		cfgOK = l.checkConfig(cfgValue, &repo.Config)
	}

	iter, err := value.LookupPath(cue.ParsePath("fleets")).Fields()
	if err != nil {
		return
	}
	for iter.Next() {
		fleet, ok := l.decodeFleet(iter.Selector().Unquoted(), iter.Value())
		if !ok {
			continue
		}
		l.checkFleetDefaults(&fleet, iter.Value())
		if cfgOK {
			l.checkFleet(&repo.Config, &fleet, iter.Value())
		}
		repo.Fleets = append(repo.Fleets, fleet)
	}
	slices.SortFunc(repo.Fleets, func(a, b Fleet) int { return strings.Compare(a.Name, b.Name) })
	l.checkLimits(repo.Fleets)
}

// checkLimits reports the workload that takes the repository past a size
// limit, in the order fleets and workloads sort.
func (l *loader) checkLimits(fleets []Fleet) {
	workloads, nodes := 0, 0
	for _, f := range fleets {
		for _, w := range f.Workloads {
			workloads++
			nodes += w.Nodes
			at := "fleets." + pathString([]string{f.Name}) + ".workloads." + pathString([]string{w.Name})
			if workloads == MaxWorkloads+1 {
				l.errs.add(w.Pos, at, "the repository has more than %d workloads, gpufleet's limit", MaxWorkloads)
			}
			if nodes > MaxNodes && nodes-w.Nodes <= MaxNodes {
				l.errs.add(w.Pos, at+".nodes", "this workload takes the repository to %d nodes, past gpufleet's limit of %d", nodes, MaxNodes)
			}
		}
	}
}

func (l *loader) decodeFleet(name string, v cue.Value) (Fleet, bool) {
	var fleet Fleet
	if v.Validate(cue.Concrete(true)) != nil || v.Decode(&fleet) != nil {
		l.checkBroken(name, v)
		return fleet, false
	}
	fleet.Pos = l.fleetPosition(name, v)
	iter, err := v.LookupPath(cue.ParsePath("workloads")).Fields()
	if err != nil {
		return fleet, false
	}
	for iter.Next() {
		var w Workload
		if err := iter.Value().Decode(&w); err != nil {
			return fleet, false
		}
		if pos, ok := l.workloadDecl[[2]string{name, w.Name}]; ok {
			w.Pos = pos
		} else {
			w.Pos = fleet.Pos
		}
		fleet.Workloads = append(fleet.Workloads, w)
	}
	slices.SortFunc(fleet.Workloads, func(a, b Workload) int { return strings.Compare(a.Name, b.Name) })
	return fleet, true
}

func (l *loader) fleetPosition(name string, v cue.Value) Position {
	if pos, ok := l.fleetDecl[name]; ok {
		return pos
	}
	return userPosition(v)
}
