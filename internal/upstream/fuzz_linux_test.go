package upstream

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzSchedule plays schedules built from the fuzzer's input through both
// paths: whatever the attacker's answer and whatever bytes follow it,
// every later client gets its own answer. Stray bytes that come only when
// the next request does are played only after answers whose end the
// upstream and the proxy may see in different places; after any other
// answer, bytes that come then are no longer stray but the upstream's
// answer to the next request, which no client can tell from a true one.
func FuzzSchedule(f *testing.F) {
	// method: GET, HEAD, POST (mod 3); framing: Content-Length of the
	// body, chunked, Content-Length 0 whatever the body, none (mod 4);
	// when: at once, while idle, on next (mod 3).
	f.Add(uint8(1), uint16(200), uint8(0), uint8(0), uint8(2), false, "<p>a page the attacker wrote</p>", evil) // HEAD answered with a body, later
	f.Add(uint8(1), uint16(200), uint8(3), uint8(0), uint8(0), false, "", evil)                                 // HEAD, unframed, at once
	f.Add(uint8(0), uint16(204), uint8(0), uint8(0), uint8(2), false, "body", evil)                             // 204 with a length
	f.Add(uint8(0), uint16(304), uint8(1), uint8(0), uint8(2), false, "body", evil)                             // 304 chunked
	f.Add(uint8(0), uint16(204), uint8(2), uint8(0), uint8(1), false, "", evil)                                 // 204, length 0, bytes while idle
	f.Add(uint8(0), uint16(200), uint8(0), uint8(0), uint8(0), false, "ok", evil)                               // past the length
	f.Add(uint8(0), uint16(200), uint8(1), uint8(0), uint8(1), false, "ok", evil)                               // past the chunks, while idle
	f.Add(uint8(0), uint16(200), uint8(0), uint8(6), uint8(2), false, "ok", evil)                               // six 1xx
	f.Add(uint8(0), uint16(200), uint8(0), uint8(5), uint8(0), false, "ok", "")                                 // five 1xx, clean
	f.Add(uint8(2), uint16(401), uint8(0), uint8(0), uint8(1), true, "no", evil)                                // early answer, bytes while idle
	f.Add(uint8(2), uint16(413), uint8(2), uint8(0), uint8(0), true, "", "0\r\n\r\n")                           // early answer, stray chunk end
	f.Fuzz(func(t *testing.T, method uint8, status uint16, framing, n1xx, when uint8, early bool, body, stray string) {
		s := schedule{method: [...]string{"GET", "HEAD", "POST"}[method%3], when: strayWhen(when % 3), stray: stray, early: early}
		if s.method == "POST" {
			s.body = "a=1"
		}
		code := 200 + int(status)%400
		noBody := s.method == "HEAD" || code == 204 || code == 304
		head := fmt.Sprintf("HTTP/1.1 %d S\r\n", code)
		switch framing % 4 {
		case 0:
			head += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
		case 1:
			head += "Transfer-Encoding: chunked\r\n\r\n"
			if body != "" {
				body = fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
			}
			body += "0\r\n\r\n"
		case 2:
			head += "Content-Length: 0\r\n\r\n"
			body = ""
		default:
			if !noBody {
				t.Skip("a body that ends when the upstream closes leaves nothing to reuse")
			}
			head += "\r\n"
		}
		s.answer = strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", int(n1xx%8)) + head + body
		ambiguous := s.method == "HEAD" || n1xx%8 > maxInformational ||
			((code == 204 || code == 304) && framing%4 < 2)
		if s.when == onNext && !ambiguous {
			t.Skip("bytes after the next request's head are its answer")
		}
		for _, path := range proxyPaths {
			run(t, path, s, false)
		}
	})
}
