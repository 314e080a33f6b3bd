package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// shownFile is a file of the repository as a doc shows it: a fenced block
// right after a comment naming the file, <!-- deploy/auth/admit.lua -->.
var shownFile = regexp.MustCompile("(?s)<!-- (deploy/[^ ]+) -->\n```[a-z]+\n(.*?)```\n")

// TestHAProxyDocShowsDeployFiles: docs/integrations-haproxy.md shows the
// configuration and Lua file of deploy/auth as they are, which the
// integration tests run, so that the doc an operator copies from is what
// was tested.
func TestHAProxyDocShowsDeployFiles(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "integrations-haproxy.md"))
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	for _, m := range shownFile.FindAllStringSubmatch(string(doc), -1) {
		shown[m[1]] = m[2]
	}
	for _, name := range []string{"deploy/auth/haproxy.cfg", "deploy/auth/admit.lua"} {
		file, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		text, ok := shown[name]
		switch {
		case !ok:
			t.Errorf("docs/integrations-haproxy.md does not show %s (a fenced block after <!-- %s -->)", name, name)
		case text != string(file):
			t.Errorf("docs/integrations-haproxy.md shows %s otherwise than the file holds it; copy the file into the doc", name)
		}
	}
}
