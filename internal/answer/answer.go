// Package answer lets the door hand a refusal, whole, to a server that can
// write it at once: admit's HTTP/1.1 engine, which then skips the header
// map, its analysis and its framing for the answer a flood gets most.
// admit auth hands each of its decisions, admitted or refused, to that
// engine the same way, and its recorder takes the door's refusal as a
// Writer.
package answer

// A Writer is an http.ResponseWriter that can write a whole answer from
// bytes its caller prepared.
type Writer interface {
	// WriteAnswer writes an answer of status with fields, each
	// "Name: value\r\n" in the order and form http.Header.Write gives
	// them, and body, framed as the server frames a handler's answer of
	// that header and body, and reports whether it did. It writes nothing
	// and returns false when the answer has begun, the header holds
	// fields, or the server would frame this answer otherwise; the caller
	// then answers through the header map. Once it returns true the answer
	// is whole: its caller must write nothing more, and a panic after it
	// leaves the answer sent.
	WriteAnswer(status int, fields, body []byte) bool
}
