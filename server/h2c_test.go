package server

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/admitgo/admit"
)

// h2cClient speaks HTTP/2 with prior knowledge to http:// URLs, and
// nothing else.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: testTimeout}
}

func TestH2C(t *testing.T) {
	r := start(t, append(appRoutes(upstreamApp(t).URL), "--h2c")...)
	r.client = h2cClient()
	resp, body := r.do(t, "GET", "/account", "")
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 || body != "/account" {
		t.Fatalf("GET /account over h2c: got %s %d %q, want HTTP/2 200", resp.Proto, resp.StatusCode, body)
	}
	r.answers(t, admit.DefaultBudgets()[admit.GroupLink].Burst, http.StatusOK, "GET", "/l/a", "")
	r.rejected(t, "GET", "/l/a", "")

	t.Run("HTTP/1.1 still", func(t *testing.T) {
		resp, err := http.Get(r.url + "/account")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusOK {
			t.Errorf("got %s %d, want HTTP/1.1 200", resp.Proto, resp.StatusCode)
		}
	})
	t.Run("the gRPC health service over the gRPC protocol", func(t *testing.T) {
		client := grpchealth.NewClient(r.client, r.url, connect.WithGRPC())
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		got, err := client.Check(ctx, &grpchealth.CheckRequest{})
		if err != nil || got.Status != grpchealth.StatusServing {
			t.Errorf("Check: got %v, %v; want serving", got, err)
		}
	})
	t.Run("limits as over TLS", func(t *testing.T) {
		settings, status := h2cHeaders(t, strings.TrimPrefix(r.url, "http://"), fields(32, 4<<10))
		if got := settings[http2.SettingMaxConcurrentStreams]; got != maxConcurrentStreams {
			t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS: got %d, want %d", got, maxConcurrentStreams)
		}
		if got := settings[http2.SettingMaxHeaderListSize]; got == 0 || got > 2*maxHeaderBytes {
			t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE: got %d, want about %d", got, maxHeaderBytes)
		}
		if status != "431" {
			t.Errorf("32 fields of 4 KiB: got :status %q, want 431", status)
		}
	})
}

func TestH2COptIn(t *testing.T) {
	r := start(t, appRoutes(upstreamApp(t).URL)...)
	if resp, err := h2cClient().Get(r.url + "/account"); err == nil {
		resp.Body.Close()
		t.Fatalf("h2c without --h2c: got %s %d, want the connection refused", resp.Proto, resp.StatusCode)
	}
	_, err := runArgs(t, nil, "--demo", "--h2c", "--tls-cert", "x.pem", "--tls-key", "x.pem")
	if err == nil || !strings.Contains(err.Error(), "--h2c is set with --tls-cert") {
		t.Errorf("--h2c with TLS: got %v, want it refused", err)
	}
}

// h2cHeaders opens a cleartext HTTP/2 connection to addr with prior
// knowledge, sends GET /account with extra header fields, and returns the
// server's settings and the answer's :status.
func h2cHeaders(t *testing.T, addr string, extra []hpack.HeaderField) (map[http2.SettingID]uint32, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: addr}, {Name: ":path", Value: "/account"},
	}, extra...) {
		enc.WriteField(f)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	settings := map[http2.SettingID]uint32{}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				f.ForeachSetting(func(s http2.Setting) error { settings[s.ID] = s.Val; return nil })
				fr.WriteSettingsAck()
			}
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		case *http2.HeadersFrame:
			hs, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				if h.Name == ":status" {
					return settings, h.Value
				}
			}
		}
	}
}
