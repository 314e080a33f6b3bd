package lru

import (
	"slices"
	"testing"
)

// order lists t's keys from most to least recently used.
func order(t *Table[string, uint64]) []string {
	var out []string
	for k := range t.All() {
		out = append(out, k)
	}
	return out
}

func filled(costs ...uint64) *Table[string, uint64] {
	t := New[string, uint64](len(costs))
	for i, c := range costs {
		t.Insert(string(rune('a'+i)), c) // the last inserted is the newest
	}
	return &t
}

func TestVictim(t *testing.T) {
	rank := func(v *uint64) uint64 { return *v }
	tests := []struct {
		name  string
		costs []uint64 // oldest first
		n     int
		want  string // "" for none
		order []string
	}{
		{"idle oldest taken at once", []uint64{0, 5}, 8, "a", []string{"b", "a"}},
		{"cheapest of the examined", []uint64{7, 3, 5, 9}, 3, "b", []string{"d", "c", "b", "a"}},
		{"kept ones move to the front", []uint64{Keep, 4, Keep}, 8, "b", []string{"c", "a", "b"}},
		{"all kept", []uint64{Keep, Keep}, 8, "", []string{"b", "a"}},
		{"idle past a kept one", []uint64{Keep, 0}, 8, "b", []string{"a", "b"}},
		{"only n examined", []uint64{Keep, Keep, 0}, 2, "", []string{"b", "a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := filled(tt.costs...)
			got := ""
			if i := tab.Victim(tt.n, rank); i >= 0 {
				got = tab.Key(i)
			}
			if got != tt.want {
				t.Errorf("victim: got %q, want %q", got, tt.want)
			}
			if o := order(tab); !slices.Equal(o, tt.order) {
				t.Errorf("order after: got %v, want %v", o, tt.order)
			}
		})
	}
}

func TestReplaceKeepsBound(t *testing.T) {
	tab := New[string, uint64](2)
	tab.Insert("a", 1)
	tab.Insert("b", 2)
	if !tab.Full() {
		t.Fatal("a table of 2 with 2 entries is not full")
	}
	tab.Replace(tab.Victim(8, func(v *uint64) uint64 { return *v }), "c", 0)
	if _, ok := tab.Peek("a"); ok || tab.Len() != 2 {
		t.Fatalf("after replacing a: a still present %v, len %d; want gone, 2", ok, tab.Len())
	}
	if i, ok := tab.Lookup("c"); !ok || *tab.At(i) != 0 || order(&tab)[0] != "c" {
		t.Fatalf("c: slot %d present %v order %v, want present at the front", i, ok, order(&tab))
	}
}

// TestKeepsLRUOrder looks one key up, replaces the oldest and wants the
// order and the index to follow.
func TestKeepsLRUOrder(t *testing.T) {
	tab := New[string, uint64](3)
	for _, k := range []string{"a", "b", "c"} {
		tab.Insert(k, 0)
	}
	if _, ok := tab.Lookup("a"); !ok {
		t.Fatal("lookup of an inserted key failed")
	}
	tab.Replace(tab.Victim(1, func(*uint64) uint64 { return 0 }), "d", 0)
	if got, want := order(&tab), []string{"d", "a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order: got %v, want %v", got, want)
	}
	if _, ok := tab.Peek("b"); ok || tab.Len() != 3 {
		t.Fatalf("after replacing b: b present %v, len %d; want gone, 3", ok, tab.Len())
	}
}
