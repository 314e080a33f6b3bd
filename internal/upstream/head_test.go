package upstream

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

func TestParseHead(t *testing.T) {
	tests := []struct {
		name    string
		head    string
		status  int
		length  int64
		chunked bool
		close   bool
		fields  int
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\n", 200, 3, false, false, 2},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 3\n\n", 200, 3, false, false, 1},
		{"no reason", "HTTP/1.1 204\r\n\r\n", 204, -1, false, false, 0},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", 200, -1, true, false, 1},
		{"same lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", 200, 3, false, false, 2},
		{"close", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n\r\n", 200, -1, false, true, 1},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\n\r\n", 200, -1, false, true, 0},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", 200, -1, false, false, 1},
		{"value space trimmed", "HTTP/1.1 200 OK\r\nX-A: \t v \t\r\n\r\n", 200, -1, false, false, 1},
		{"name canonical", "HTTP/1.1 200 OK\r\nx-a-b: v\r\n\r\n", 200, -1, false, false, 1},
		{"custom status", "HTTP/1.1 999 Whatever\r\n\r\n", 999, -1, false, false, 0},
		{"informational", "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n", 103, -1, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseHead(tt.head, nil)
			if err != nil {
				t.Fatalf("parseHead: %v", err)
			}
			if h.status != tt.status || h.length != tt.length || h.chunked != tt.chunked || h.close != tt.close || len(h.fields) != tt.fields {
				t.Errorf("got status %d length %d chunked %v close %v fields %d, want %d %d %v %v %d",
					h.status, h.length, h.chunked, h.close, len(h.fields), tt.status, tt.length, tt.chunked, tt.close, tt.fields)
			}
		})
	}
	h, _ := parseHead("HTTP/1.1 200 OK\r\nx-a-b:  v \r\n\r\n", nil)
	if got := h.fields[0]; got != (field{"X-A-B", "v"}) {
		t.Errorf("field: got %q, want X-A-B: v", got)
	}
}

// TestParseHeadRefuses lists heads a smuggler or a broken upstream sends:
// each is refused, and the proxy answers 502.
func TestParseHeadRefuses(t *testing.T) {
	for name, head := range map[string]string{
		"empty":                   "",
		"no end":                  "HTTP/1.1 200 OK\r\nA: b\r\n",
		"bytes after":             "HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/2 line":             "HTTP/2.0 200 OK\r\n\r\n",
		"HTTP/1.2":                "HTTP/1.2 200 OK\r\n\r\n",
		"lower-case proto":        "http/1.1 200 OK\r\n\r\n",
		"two-digit status":        "HTTP/1.1 20 OK\r\n\r\n",
		"four-digit status":       "HTTP/1.1 2000 OK\r\n\r\n",
		"signed status":           "HTTP/1.1 +20 OK\r\n\r\n",
		"status below 100":        "HTTP/1.1 099 OK\r\n\r\n",
		"control in reason":       "HTTP/1.1 200 O\x00K\r\n\r\n",
		"folded line":             "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",
		"space before colon":      "HTTP/1.1 200 OK\r\nA : b\r\n\r\n",
		"no colon":                "HTTP/1.1 200 OK\r\nA b\r\n\r\n",
		"empty name":              "HTTP/1.1 200 OK\r\n: b\r\n\r\n",
		"bare CR in value":        "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n",
		"NUL in value":            "HTTP/1.1 200 OK\r\nA: b\x00\r\n\r\n",
		"DEL in value":            "HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n",
		"lengths differ":          "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
		"length list":             "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n",
		"signed length":           "HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n",
		"empty length":            "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		"huge length":             "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"gzip coding":             "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"two codings":             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"chunked and length":      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"chunked on HTTP/1.0":     "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
		"leading empty line":      "\r\nHTTP/1.1 200 OK\r\n\r\n",
		"space before first line": " HTTP/1.1 200 OK\r\n\r\n",
	} {
		if _, err := parseHead(head, nil); err == nil {
			t.Errorf("%s: parseHead(%q) accepted it", name, head)
		}
	}
}

// FuzzParseHead holds parseHead to http.ReadResponse: whatever it accepts,
// net/http reads alike, with the same status, fields and framing. It may
// refuse more.
func FuzzParseHead(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n",          // the common answer
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", // a streamed one
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",     // an old upstream that keeps the connection
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
		"HTTP/1.1 200 OK\nX-A:  b\n\n",                                       // bare LF ends
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 03\r\n\r\n", // lengths that differ in spelling
		"HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",                              // a folded line
		"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHead(s, nil)
		if err != nil {
			return
		}
		req, _ := http.NewRequest("GET", "http://example.test/", nil)
		resp, rerr := http.ReadResponse(bufio.NewReader(strings.NewReader(s)), req)
		if rerr != nil {
			t.Fatalf("parseHead accepted %q; http.ReadResponse: %v", s, rerr)
		}
		if resp.StatusCode != h.status {
			t.Fatalf("%q: status %d, net/http %d", s, h.status, resp.StatusCode)
		}
		got := make(http.Header)
		for _, f := range h.fields {
			got[f.name] = append(got[f.name], f.value)
		}
		for name, want := range resp.Header {
			switch name {
			case "Content-Length", "Transfer-Encoding", "Trailer", "Cache-Control":
				continue // framing net/http rewrites, and the Cache-Control it adds to Pragma
			}
			if strings.Join(got[name], "\n") != strings.Join(want, "\n") {
				t.Fatalf("%q: %s is %q, net/http %q", s, name, got[name], want)
			}
		}
		bodied := h.status >= 200 && h.status != 204 && h.status != 304
		if want := resp.ContentLength; bodied && h.length != want {
			t.Fatalf("%q: length %d, net/http %d", s, h.length, want)
		}
		if chunked := len(resp.TransferEncoding) > 0; h.chunked != chunked {
			t.Fatalf("%q: chunked %v, net/http %v", s, h.chunked, chunked)
		}
		// net/http counts a body that ends with the connection as a close.
		if untilClose := bodied && !h.chunked && h.length < 0; (h.close || untilClose) != resp.Close {
			t.Fatalf("%q: close %v, until close %v; net/http %v", s, h.close, untilClose, resp.Close)
		}
	})
}

func TestBlockEnd(t *testing.T) {
	tests := []struct {
		in   string
		from int
		want int
	}{
		{"\r\n", 0, 2},
		{"\n", 0, 1},
		{"A: b\r\n\r\nrest", 0, 8},
		{"A: b\n\nrest", 0, 6},
		{"A: b\r\n", 0, 0},
		{"A: b\r\n\r", 0, 0},
		{"A: b\r\n\r\n", 4, 8},
		{"A: b\r\nC: d\r\n", 0, 0},
	}
	for _, tt := range tests {
		if got := blockEnd([]byte(tt.in), tt.from); got != tt.want {
			t.Errorf("blockEnd(%q, %d) = %d, want %d", tt.in, tt.from, got, tt.want)
		}
	}
}

func TestReadBlock(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 3*readBufferSize) + "\r\n\r\n"
	tests := []struct {
		name, in string
		limit    int
		want     string
		err      bool
	}{
		{"short", "HTTP/1.1 200 OK\r\n\r\nbody", 1 << 10, "HTTP/1.1 200 OK\r\n\r\n", false},
		{"longer than the buffer", head + "body", 1 << 20, head, false},
		{"over the limit in the buffer", "HTTP/1.1 200 OK\r\nA: bbbbbbbb\r\n\r\n", 20, "", true},
		{"over the limit past the buffer", head, 2 * readBufferSize, "", true},
		{"cut", "HTTP/1.1 200 OK\r\n", 1 << 10, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), readBufferSize)
			var spill []byte
			got, err := readBlock(br, tt.limit, &spill)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("readBlock: got %d bytes, %v; want %d bytes, error %v", len(got), err, len(tt.want), tt.err)
			}
		})
	}
}
