// SPDX-License-Identifier: BSD-3-Clause

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// decl is one name a top-level declaration of the VM test package makes: a
// function, a method, a var, const or type.
type decl struct {
	name   string // "recv.method" for a method
	plain  string // the name in the package scope; "" for a method
	recv   string // the receiver's type, for a method
	method string
	file   string
	spans  [][2]int // offsets in file covered: the declaration and its comments
	isTest bool
	idents map[string]bool // identifiers it refers to
	sels   map[string]bool // selectors it uses (x.sel)
}

func isTestFunc(d *ast.FuncDecl) bool {
	n := d.Name.Name
	if d.Recv != nil || !strings.HasPrefix(n, "Test") || n == "TestMain" {
		return false
	}
	return len(n) == 4 || !(n[4] >= 'a' && n[4] <= 'z')
}

// scanVM returns, for each ID the VM test files name, the tests that name it:
// the Test function around the mention, or the tests that reach the
// declaration around it (a helper, a table), written "TestX (via helper)".
// A test reaches the functions, vars, consts and types it names, and the
// methods it calls of the types it reaches, and so on from those; without
// type information a method is found by name, so this may list a test that
// does not in fact run the helper.
func scanVM(root string, m *matcher) (map[string][]string, []error, error) {
	files, err := filepath.Glob(filepath.Join(root, vmTestDir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no *_test.go files", vmTestDir)
	}
	fset := token.NewFileSet()
	var decls []*decl
	var mentions []mention
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		rel := vmTestDir + "/" + filepath.Base(path)
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		tf := fset.File(f.Pos())
		for _, d := range f.Decls {
			decls = append(decls, newDecls(d, rel, tf)...)
		}
		mentions = append(mentions, m.find(rel, string(src))...)
	}
	reachedBy := map[*decl][]string{}
	for _, t := range decls {
		if t.isTest {
			for _, d := range reach(t, decls) {
				reachedBy[d] = append(reachedBy[d], t.name)
			}
		}
	}

	errs := m.unknown(mentions)
	// ID → test (or other holder) → the helpers it names the ID through,
	// "" when it names the ID itself.
	named := map[string]map[string]map[string]bool{}
	note := func(id, by, via string) {
		if named[id] == nil {
			named[id] = map[string]map[string]bool{}
		}
		if named[id][by] == nil {
			named[id][by] = map[string]bool{}
		}
		named[id][by][via] = true
	}
	for _, x := range mentions {
		if !m.known[x.ID] {
			continue
		}
		owners := ownersOf(decls, x)
		if len(owners) == 0 {
			note(x.ID, fmt.Sprintf("%s:%d (outside any declaration)", filepath.Base(x.File), x.Line), "")
		}
		for _, o := range owners {
			switch {
			case o.isTest:
				note(x.ID, o.name, "")
			case len(reachedBy[o]) == 0:
				note(x.ID, fmt.Sprintf("%s (%s, reached by no test)", o.name, filepath.Base(x.File)), "")
			default:
				for _, t := range reachedBy[o] {
					note(x.ID, t, o.name)
				}
			}
		}
	}
	vm := map[string][]string{}
	for id, tests := range named {
		vm[id] = testList(tests)
	}
	return vm, errs, nil
}

// reach returns the declarations test t reaches, t excluded.
func reach(t *decl, decls []*decl) []*decl {
	// What the reached declarations refer to, and the package-scope names
	// reached (a method is reached once its receiver's type is).
	idents, sels, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
	add := func(d *decl) {
		for k := range d.idents {
			idents[k] = true
		}
		for k := range d.sels {
			sels[k] = true
		}
		if d.plain != "" {
			names[d.plain] = true
		}
	}
	add(t)
	seen := map[*decl]bool{t: true}
	var out []*decl
	for grew := true; grew; {
		grew = false
		for _, d := range decls {
			if seen[d] {
				continue
			}
			if d.plain != "" && idents[d.plain] || d.recv != "" && names[d.recv] && sels[d.method] {
				seen[d] = true
				add(d)
				out = append(out, d)
				grew = true
			}
		}
	}
	return out
}

// ownersOf returns the declarations whose text holds mention x.
func ownersOf(decls []*decl, x mention) []*decl {
	var out []*decl
	for _, d := range decls {
		if d.file != x.File {
			continue
		}
		for _, s := range d.spans {
			if s[0] <= x.Off && x.Off < s[1] {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// newDecls returns the names d declares, with what each refers to. The doc
// comment of a var, const or type group belongs to every name in it; the
// doc and line comments of one spec to its names.
func newDecls(d ast.Decl, file string, tf *token.File) []*decl {
	span := func(n ast.Node, doc, line *ast.CommentGroup) [2]int {
		start, end := n.Pos(), n.End()
		if doc != nil {
			start = doc.Pos()
		}
		if line != nil && line.End() > end {
			end = line.End()
		}
		return [2]int{tf.Offset(start), tf.Offset(end)}
	}
	newDecl := func(plain string, body ast.Node, spans ...[2]int) *decl {
		x := &decl{name: plain, plain: plain, file: file, spans: spans,
			idents: map[string]bool{}, sels: map[string]bool{}}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x.sels[n.Sel.Name] = true
				ast.Inspect(n.X, visit)
				return false
			case *ast.Ident:
				x.idents[n.Name] = true
			}
			return true
		}
		ast.Inspect(body, visit)
		return x
	}

	var out []*decl
	switch d := d.(type) {
	case *ast.FuncDecl:
		x := newDecl(d.Name.Name, d, span(d, d.Doc, nil))
		if d.Recv != nil && len(d.Recv.List) == 1 {
			x.recv = recvType(d.Recv.List[0].Type)
			x.method, x.plain = x.name, ""
			x.name = x.recv + "." + x.method
		}
		x.isTest = isTestFunc(d)
		out = append(out, x)
	case *ast.GenDecl:
		var group [][2]int
		if d.Doc != nil && d.Lparen.IsValid() {
			group = append(group, span(d.Doc, nil, nil))
		}
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.ValueSpec:
				doc := sp.Doc
				if doc == nil && !d.Lparen.IsValid() {
					doc = d.Doc
				}
				s := append([][2]int{span(sp, doc, sp.Comment)}, group...)
				for _, n := range sp.Names {
					out = append(out, newDecl(n.Name, sp, s...))
				}
			case *ast.TypeSpec:
				doc := sp.Doc
				if doc == nil && !d.Lparen.IsValid() {
					doc = d.Doc
				}
				s := append([][2]int{span(sp, doc, sp.Comment)}, group...)
				out = append(out, newDecl(sp.Name.Name, sp, s...))
			}
		}
	}
	return out
}

// recvType returns the name of a receiver's type: T for T, *T, T[P], *T[P].
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// testList writes tests as "TestA, TestB (via h1, h2)", sorted; a test that
// names the ID itself is listed without its helpers.
func testList(tests map[string]map[string]bool) []string {
	var out []string
	for t, via := range tests {
		if via[""] {
			out = append(out, t)
			continue
		}
		vs := make([]string, 0, len(via))
		for v := range via {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		out = append(out, t+" (via "+strings.Join(vs, ", ")+")")
	}
	sort.Strings(out)
	return out
}
