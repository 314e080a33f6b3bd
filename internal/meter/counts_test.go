package meter

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
)

// uncomparable is a meter provider whose type cannot be a map key.
type uncomparable struct {
	noop.MeterProvider
	_ []int
}

// TestSharedCountsUncomparableProvider gives counts of their own to the
// holders of a provider that cannot be a map key, rather than panic.
func TestSharedCountsUncomparableProvider(t *testing.T) {
	sets := []attribute.Set{attribute.NewSet(attribute.String("k", "v"))}
	a, err := SharedCounts(uncomparable{}, "test.counts", "x", sets)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SharedCounts(uncomparable{}, "test.counts", "x", sets)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Error("two holders of an uncomparable provider share counts")
	}
	a.Add(0, 1) // counts of its own work
}
