package reference

import (
	"os"
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
	src, err := os.ReadFile(referenceDir(t) + "/src/settings/settings.go")
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
