package upstream

import "testing"

func TestUnfit(t *testing.T) {
	for _, tt := range []struct {
		method  string
		status  int
		length  int64
		chunked bool
		unfit   bool
	}{
		{"HEAD", 200, 41, false, true},
		{"HEAD", 200, -1, false, true},
		{"HEAD", 404, 0, false, true},
		{"GET", 204, 41, false, true},
		{"GET", 304, 41, false, true},
		{"GET", 304, -1, true, true},
		{"GET", 204, 0, false, false}, // frames nothing either way
		{"GET", 204, -1, false, false},
		{"GET", 304, -1, false, false},
		{"GET", 200, 41, false, false},
		{"GET", 200, -1, true, false},
		{"POST", 205, 0, false, false},
	} {
		if got := unfit(tt.method, tt.status, tt.length, tt.chunked) != ""; got != tt.unfit {
			t.Errorf("unfit(%s, %d, length %d, chunked %v) = %v, want %v", tt.method, tt.status, tt.length, tt.chunked, got, tt.unfit)
		}
	}
}
