package hop

import "testing"

func TestHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
		"Upgrade": true, "Proxy-Connection": true, "Proxy-Authorization": true, "Proxy-Authenticate": true,
		"Content-Length": false, "Cache-Control": false, "connection": false, // names are canonical
	} {
		if got := Header(name); got != want {
			t.Errorf("Header(%q) = %v, want %v", name, got, want)
		}
	}
}
