package rls

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBoundedNameKeepsUTF8 cuts a long name before a character, never
// inside one: a label that is not UTF-8 is dropped by the Prometheus
// exporter, and with it the client's hits.
func TestBoundedNameKeepsUTF8(t *testing.T) {
	for pad := range 4 {
		name := strings.Repeat("a", 94+pad) + "é€𝄞" + strings.Repeat("b", 40)
		got := boundedName(name)
		if !utf8.ValidString(got) || len(got) > maxMetricName {
			t.Errorf("pad %d: %q (%d bytes), want valid UTF-8 of at most %d", pad, got, len(got), maxMetricName)
		}
		if other := boundedName(name + "c"); other == got {
			t.Errorf("pad %d: two long names share %q", pad, got)
		}
	}
}
