package main

import (
	"bufio"
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/admitgo/admit/server"
)

// admitHandler builds admit's handler from the command's flags and
// environment, as the admit command would, logging warnings and errors
// only.
func admitHandler(args []string) http.Handler {
	cfg, err := server.Load(args, os.Getenv)
	if err != nil {
		log.Fatalf("bareproxy: --loop: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(context.Background(), cfg, logger)
	if err != nil {
		log.Fatalf("bareproxy: --loop: %v", err)
	}
	return s.Handler()
}

// serveLoop serves h on ln's connections, one goroutine each, reading each
// request with http.ReadRequest and writing each answer whole.
func serveLoop(ln net.Listener, h http.Handler) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go serveConn(c, h)
	}
}

func serveConn(c net.Conn, h http.Handler) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := &wholeWriter{header: make(http.Header), out: bufio.NewWriter(c)}
	base := context.WithValue(context.Background(), http.LocalAddrContextKey, c.LocalAddr())
	remote := c.RemoteAddr().String()
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		req.RemoteAddr = remote
		ctx, cancel := context.WithCancel(base)
		h.ServeHTTP(w, req.WithContext(ctx))
		cancel()
		if err := w.finish(); err != nil {
			return
		}
	}
}

// wholeWriter holds an answer until the handler returns, then writes it
// with its length, as net/http frames an answer that fits its buffer. It
// drops 1xx answers and cannot flush. It allocates nothing per answer once
// its buffers have grown, and formats Date once a second, so that the
// instrument costs what an engine written for speed would.
type wholeWriter struct {
	header http.Header
	status int
	body   []byte
	out    *bufio.Writer
	keys   []string
	date   []byte
	dated  int64 // the Unix second date is of
}

func (w *wholeWriter) Header() http.Header { return w.header }

func (w *wholeWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
}

func (w *wholeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, p...)
	return len(p), nil
}

// finish writes the answer, as net/http would (the header sorted, Date and
// Content-Length last), and readies w for the next.
func (w *wholeWriter) finish() error {
	w.WriteHeader(http.StatusOK)
	out := w.out
	out.WriteString("HTTP/1.1 ")
	out.Write(strconv.AppendInt(out.AvailableBuffer(), int64(w.status), 10))
	out.WriteByte(' ')
	out.WriteString(http.StatusText(w.status))
	out.WriteString("\r\n")
	delete(w.header, "Content-Length")
	w.keys = w.keys[:0]
	for k := range w.header {
		w.keys = append(w.keys, k)
	}
	slices.Sort(w.keys)
	for _, k := range w.keys {
		for _, v := range w.header[k] {
			out.WriteString(k)
			out.WriteString(": ")
			out.WriteString(v)
			out.WriteString("\r\n")
		}
	}
	if now := time.Now(); now.Unix() != w.dated {
		w.date, w.dated = now.UTC().AppendFormat(w.date[:0], http.TimeFormat), now.Unix()
	}
	out.WriteString("Date: ")
	out.Write(w.date)
	out.WriteString("\r\nContent-Length: ")
	out.Write(strconv.AppendInt(out.AvailableBuffer(), int64(len(w.body)), 10))
	out.WriteString("\r\n\r\n")
	out.Write(w.body)
	clear(w.header)
	w.status, w.body = 0, w.body[:0]
	return out.Flush()
}
