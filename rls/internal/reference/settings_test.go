package reference

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// settingsList is admit's copy of the names of the reference's settings,
// against which package rlsd's test checks admit rls's migration table.
const settingsList = "../../../server/internal/rlsd/testdata/envoy-ratelimit-settings.txt"

// TestSettingsList keeps settingsList equal to every envconfig name of the
// reference's settings struct, in its order, read from the pinned
// version's source.
func TestSettingsList(t *testing.T) {
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/envoyproxy/ratelimit@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v\n%s", err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v, %s", err, out)
	}
	src, err := os.ReadFile(mod.Dir + "/src/settings/settings.go")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`envconfig:"([A-Z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
		want = append(want, m[1])
	}
	data, err := os.ReadFile(settingsList)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); len(want) < 100 || !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q (the reference's settings.go at %s)", settingsList, got, want, version)
	}
}
