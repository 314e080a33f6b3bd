package admit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxExported is the door's public surface, counted as go doc lists it:
// the exported names of the package and the exported methods of its
// exported types. Every exported name is a promise; a new one has to
// displace another. BudgetError and its three methods (the error
// interface, errors.As's unwrapping, and InWords) are the one exception:
// a refusal that fronts read as a value rather than as message text.
const maxExported = 36

func TestExportedNamesStayFew(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	if len(names) > maxExported {
		t.Errorf("the door exports %d names, want at most %d: %v", len(names), maxExported, names)
	}
	if !slices.Contains(names, "Door.Decide") || !slices.Contains(names, "New") {
		t.Errorf("the count missed names it must see: %v", names)
	}
}
