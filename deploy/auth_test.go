package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthConfigsDocumented: every front configuration in deploy/auth,
// which the server's tests run against the real proxies, is printed whole
// in docs/integrations.md, so the page shows what is tested.
func TestAuthConfigsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "integrations.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("auth", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/auth holds no configuration (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "\n"+string(b)+"```\n") {
			t.Errorf("docs/integrations.md does not print deploy/%s whole, in a code block of its own", f)
		}
	}
}
