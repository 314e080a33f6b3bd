package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFileKeysSpelledOnce holds the config file's keys to one spelling
// each: every key is a string literal in exactly one non-test Go file of
// the server and the binary, so a second reader or printer of a field
// cannot drift from the first. The file's readers are the source of the
// keys, so a key added to them is held too.
func TestFileKeysSpelledOnce(t *testing.T) {
	var keys []string
	for _, f := range budgetFields {
		keys = append(keys, f.key)
	}
	keys = append(keys, []string{FieldRoutes, fieldBudgets, FieldGroup, FieldPattern, fieldCost, "strict_methods", "upstream_profile", "allow_spellings", fieldUpgrades, "admin_hosts", FieldEngine}...)
	in := make(map[string]map[string]bool)
	for _, dir := range []string{"../..", "../../../cmd"} { // the server, with its packages, and the binary
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if _, imp := n.(*ast.ImportSpec); imp {
					return false
				}
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					if in[v] == nil {
						in[v] = make(map[string]bool)
					}
					in[v][path] = true
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if files := in[k]; len(files) != 1 {
			t.Errorf("file key %q is a string literal in %d files, want 1: %v", k, len(files), slices.Sorted(maps.Keys(files)))
		}
	}
	if len(keys) < 25 {
		t.Errorf("found %d file keys; the readers lost some", len(keys))
	}
}

// TestDoorWordsCoverTheDoor holds doorWords to every field the door's
// combination errors name, so that a new check cannot leak a Go name into
// the server's errors about its config file.
func TestDoorWordsCoverTheDoor(t *testing.T) {
	paths, err := filepath.Glob("../../../*.go") // the door
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			// The reason's place among each constructor's arguments.
			fn, ok := call.Fun.(*ast.Ident)
			if !ok {
				return true
			}
			at, known := map[string]int{"fieldsError": 1, "routeError": 3}[fn.Name]
			if !known || len(call.Args) <= at {
				return true
			}
			lit, ok := call.Args[at].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: %s with a reason that is not a literal", path, fn.Name)
				return true
			}
			why, _ := strconv.Unquote(lit.Value)
			for rest := why; strings.Contains(rest, "{"); {
				_, after, _ := strings.Cut(rest, "{")
				name, tail, _ := strings.Cut(after, "}")
				if _, ok := doorWords[name]; !ok && name != "ChosenKeys" { // each route's own: see fileWords
					t.Errorf("%s: the door names {%s}, which doorWords does not word", path, name)
				}
				names++
				rest = tail
			}
			return true
		})
	}
	if names < 10 {
		t.Errorf("found %d names in the door's reasons; the search lost them", names)
	}
}

// TestGroupKeysDocumented holds docs/operators.md to the file's keys of a
// group: each is in the table of a group's fields or in the annotated
// example of budgets, and each row of the table names keys the file reads.
func TestGroupKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| field | values | default | meaning |\n| --- | --- | --- | --- |\n")
	if !ok {
		t.Fatal("docs/operators.md has no table of a group's fields")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]bool{}
	for row := range strings.Lines(table) {
		first := strings.Split(row, "|")[1]
		for _, key := range strings.Split(first, ",") {
			documented[strings.Trim(key, " `")] = true
		}
	}
	_, example, _ := strings.Cut(string(doc), "budgets:\n  webhook:\n")
	example, _, _ = strings.Cut(example, "```")
	for _, f := range budgetFields {
		if !documented[f.key] && !strings.Contains(example, "    "+f.key+":") {
			t.Errorf("file key %q has no row in docs/operators.md's table of a group's fields", f.key)
		}
		delete(documented, f.key)
	}
	for key := range documented {
		t.Errorf("docs/operators.md's table of a group's fields has %q, which the file does not read", key)
	}
}
