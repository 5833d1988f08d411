package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// addedFields are the fields of report.Case that change after NewCase only
// through (*report.Case).Add, which records who added what.
var addedFields = []string{"Notes", "Extra", "Checks"}

// TestCaseAdditions: once built, a report case's notes, figures and checks
// change only through (*report.Case).Add (issue 32), so its Additions say
// who added each. No file outside report/, tests included, assigns,
// appends to, indexes into for writing, deletes from, clears or takes the
// address of report.Case's Notes, Extra or Checks. Files are found by
// name first (any such write to a field of that name, or the word Extra),
// then the fields are resolved by type, so a plan's or a result's Notes do
// not count.
//
// And Extra's keys are report's constants: no file outside report/ writes
// a string literal or a conversion where a report.ExtraKey goes.
func TestCaseAdditions(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}}", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found only %d packages", len(lines))
	}
	fset := token.NewFileSet()
	var suspects []string // import paths with a write to a field of one of the names
	scanned := 0
	for _, l := range lines {
		path, dir, ok := strings.Cut(l, " ")
		if !ok {
			t.Fatalf("go list line %q", l)
		}
		if path == mod+"/report" || strings.HasPrefix(path, mod+"/report/") {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			scanned++
			if bytes.Contains(src, []byte("Extra")) || len(caseWrites(file, func(*ast.SelectorExpr) bool { return true })) > 0 {
				suspects = append(suspects, path)
				break
			}
		}
	}
	if scanned < 200 {
		t.Fatalf("scanned only %d files", scanned)
	}
	if len(suspects) == 0 {
		return
	}
	pkgs, err := packages.Load(&packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Tests: true,
	}, suspects...)
	if err != nil {
		t.Fatalf("load %v: %v", suspects, err)
	}
	seen := map[token.Position]bool{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.ID, e)
		}
		if p.TypesInfo == nil {
			continue
		}
		isCaseField := func(sel *ast.SelectorExpr) bool {
			s, ok := p.TypesInfo.Selections[sel]
			return ok && s.Kind() == types.FieldVal && isReportType(derefType(s.Recv()), "Case")
		}
		for _, file := range p.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				var free bool
				switch x := n.(type) {
				case *ast.BasicLit:
					free = isReportType(p.TypesInfo.TypeOf(x), "ExtraKey")
				case *ast.CallExpr:
					tv, ok := p.TypesInfo.Types[x.Fun]
					free = ok && tv.IsType() && isReportType(tv.Type, "ExtraKey")
				}
				if !free {
					return true
				}
				if pos := p.Fset.Position(n.Pos()); !seen[pos] {
					seen[pos] = true
					t.Errorf("%s: a free-text Extra key; use a report.Extra* constant (report/addition.go)", pos)
				}
				return true
			})
			for _, sel := range caseWrites(file, isCaseField) {
				pos := p.Fset.Position(sel.Pos())
				if seen[pos] {
					continue // a package's file again in its test variant
				}
				seen[pos] = true
				t.Errorf("%s: writes report.Case.%s directly; add through (*report.Case).Add(report.Addition{By: ...})", pos, sel.Sel.Name)
			}
		}
	}
}

// isReportType reports whether t is report's named type name.
func isReportType(t types.Type, name string) bool {
	named, ok := types.Unalias(t).(*types.Named)
	return ok && named.Obj().Name() == name && named.Obj().Pkg() != nil && named.Obj().Pkg().Path() == mod+"/report"
}

// derefType strips one pointer.
func derefType(t types.Type) types.Type {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// caseWrites returns the selectors of a field named in addedFields that
// file writes and match accepts: the left of an assignment or ++/--
// (through indexing), the operand of &, the first argument of delete,
// clear, maps.Copy, maps.DeleteFunc, maps.Insert or a slices sort.
func caseWrites(file *ast.File, match func(*ast.SelectorExpr) bool) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	field := func(e ast.Expr) {
		for {
			switch x := e.(type) {
			case *ast.ParenExpr:
				e = x.X
				continue
			case *ast.IndexExpr:
				e = x.X
				continue
			case *ast.SelectorExpr:
				if slices.Contains(addedFields, x.Sel.Name) && match(x) {
					out = append(out, x)
				}
			}
			return
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				field(l)
			}
		case *ast.IncDecStmt:
			field(x.X)
		case *ast.UnaryExpr:
			if x.Op == token.AND {
				field(x.X)
			}
		case *ast.CallExpr:
			if len(x.Args) == 0 {
				return true
			}
			switch f := x.Fun.(type) {
			case *ast.Ident:
				if f.Name == "delete" || f.Name == "clear" {
					field(x.Args[0])
				}
			case *ast.SelectorExpr:
				if pkg, ok := f.X.(*ast.Ident); ok && (pkg.Name == "maps" && slices.Contains([]string{"Copy", "DeleteFunc", "Insert"}, f.Sel.Name) ||
					pkg.Name == "slices" && strings.HasPrefix(f.Sel.Name, "Sort")) {
					field(x.Args[0])
				}
			}
		}
		return true
	})
	return out
}
