package admit

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// generatedBlocks returns the blocks of docs/performance.md that a
// benchmark run wrote, each between <!-- NAME:begin --> and <!-- NAME:end -->,
// by name.
func generatedBlocks(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<!-- ([a-z-]+):begin -->(.*?)<!-- ([a-z-]+):end -->`).FindAllStringSubmatch(string(doc), -1) {
		if m[1] != m[3] {
			t.Fatalf("docs/performance.md: block %q ends as %q", m[1], m[3])
		}
		blocks[m[1]] = m[2]
	}
	return blocks
}

// figureRE is a figure as the docs write one: 1,048,576 or 4.0 or 2.5.
var figureRE = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// figures returns the values of the figures in s, outside link targets and
// code.
func figures(s string) []string {
	s = regexp.MustCompile("\\]\\([^)]*\\)|`[^`]*`").ReplaceAllString(s, " ")
	return figureRE.FindAllString(s, -1)
}

func figureValue(f string) float64 {
	v, _ := strconv.ParseFloat(strings.ReplaceAll(f, ",", ""), 64)
	return v
}

// TestReadmeFiguresComeFromOneRun: every figure README.md's "What it
// measures up to" gives is a figure of a generated block of
// docs/performance.md, and each block says when and how it was made, so a
// figure in the README can be traced to one run and goes stale with it.
func TestReadmeFiguresComeFromOneRun(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## What it measures up to\n")
	if !ok {
		t.Fatal(`README.md has no "## What it measures up to" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := generatedBlocks(t)
	known := map[float64]bool{}
	for name, b := range blocks {
		if !regexp.MustCompile(`\d{4}-\d\d-\d\d`).MatchString(b) || !regexp.MustCompile("`(?:[A-Z_]+=\\S+ )*(?:scripts/|bench/run|go test|make )[^`]*`|go test -").MatchString(b) {
			t.Errorf("generated block %q names no date or no command it was made by", name)
		}
		for _, f := range figures(b) {
			known[figureValue(f)] = true
		}
	}
	for _, f := range figures(section) {
		if !known[figureValue(f)] {
			t.Errorf("README.md gives %s, which no generated block of docs/performance.md holds", f)
		}
	}
}
