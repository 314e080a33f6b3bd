package config

import (
	"slices"
	"strings"
	"testing"
)

// TestUsageShowsBooleanDefaults: every front's -h gives each boolean flag
// its default, as it gives every other flag with one, so that a reader
// need not guess what leaving one out means.
func TestUsageShowsBooleanDefaults(t *testing.T) {
	boolsShowDefaults(t, "admit", slices.Concat(Options, AuthOptions))
	boolsShowDefaults(t, "admit rls", RLSOptions)
}

func boolsShowDefaults[T Target](t *testing.T, front string, options []OptionFor[T]) {
	t.Helper()
	var out strings.Builder
	PrintOptions(&out, options)
	for _, o := range options {
		if !o.isBool() {
			continue
		}
		_, entry, ok := strings.Cut(out.String(), "  --"+o.Name+"\n")
		if !ok {
			t.Errorf("%s -h: no --%s", front, o.Name)
			continue
		}
		if entry, _, _ = strings.Cut(entry, "\n"); !strings.Contains(entry, `default "`) {
			t.Errorf("%s -h: --%s shows no default:\n%s", front, o.Name, entry)
		}
	}
}
