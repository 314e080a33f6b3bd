package admit

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// retired are spellings of a concept that has one name in the glossary of
// docs/design.md, with the name to write instead. CHANGELOG.md keeps the
// words of its time, and bench/ is a module of its own.
var retired = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`client's in-flight cap\b`), "the client cap"},
	{regexp.MustCompile(`group's in-flight cap\b`), "the group cap"},
	{regexp.MustCompile(`in-flight limits?\b`), "the in-flight caps"},
	{regexp.MustCompile(`per-client cap\b`), "the client cap, or a listener's per-client connection cap"},
	{regexp.MustCompile(`cost-weighted`), "a route's cost"},
}

// TestGlossarySpellings: the glossary names each concept below, and no doc
// or Go file of the module spells one in a retired way.
func TestGlossarySpellings(t *testing.T) {
	design, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, glossary, _ := strings.Cut(string(design), "### Glossary\n")
	glossary, _, _ = strings.Cut(glossary, "\n### ")
	for _, term := range []string{"in-flight caps", "client cap", "group cap", "cost", "algorithm", "config", "configuration", "option"} {
		if !strings.Contains(glossary, "\n| "+term+" | ") {
			t.Errorf("docs/design.md's glossary has no row for %q", term)
		}
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == "bench" || path == ".git" || d.Name() == "node_modules" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || path == "CHANGELOG.md" || path == "glossary_test.go":
			return nil
		case !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md"):
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, r := range retired {
				if m := r.re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q: write %s (docs/design.md, Glossary)", path, i+1, m, r.name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
