package config

import (
	"fmt"
	"strings"
	"time"
)

// XDS is where admit rls takes its configuration from in place of files:
// an xDS server, subscribed to over one ADS stream in state of the world,
// as envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW subscribes. The zero
// Server means files (--config).
type XDS struct {
	Server       string            // host:port of the xDS server; "": none
	NodeID       string            // the node's id, which the server keys its snapshots by
	NodeMetadata map[string]string // the node's metadata, as strings; nil: none
	Headers      map[string]string // gRPC metadata sent on the stream; nil: none
	TLS          bool              // TLS to the server; else cleartext
	CA           string            // PEM file the server's certificate must chain to; "": the system's roots
	SAN          string            // the name the server's certificate must carry; "": the host of Server
	ClientCert   string            // the client certificate shown to the server (PEM); with ClientKey
	ClientKey    string
	Retry        time.Duration // the first wait before a new stream; > 0
	RetryMax     time.Duration // the longest one, reached by doubling; >= Retry
	MaxMsgBytes  int           // the largest message taken from the server; 1 to MaxXDSMsgBytes
}

// MaxXDSMsgBytes bounds --xds-max-msg-bytes: the bound of one
// configuration file, so that the server's configuration is bounded as a
// file's is.
const MaxXDSMsgBytes = 16 << 20

// parsePairs reads key<sep>value pairs, comma separated, neither empty
// and no key twice: --xds-node-metadata's key=value, as
// CONFIG_GRPC_XDS_NODE_METADATA, and --xds-headers' key:value, as
// CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS. Header names must be what
// gRPC metadata carries (letters, digits, -, _ and ., folded to lower
// case; not grpc-), and values printable ASCII.
func parsePairs(v, sep string, header bool) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	out := map[string]string{}
	for p := range strings.SplitSeq(v, ",") {
		key, value, ok := strings.Cut(p, sep)
		if header {
			key = strings.ToLower(key)
		}
		switch {
		case (!ok || key == "" || value == "") && header:
			return nil, fmt.Errorf("a pair is not key%svalue, neither empty", sep)
		case !ok || key == "" || value == "":
			return nil, fmt.Errorf("%q: want key%svalue, neither empty", p, sep)
		case out[key] != "":
			return nil, fmt.Errorf("key %q is given twice", key)
		case header && (strings.IndexFunc(key, func(r rune) bool { return !isHeaderKeyRune(r) }) >= 0 || strings.HasPrefix(key, "grpc-")):
			return nil, fmt.Errorf("header %q: want letters, digits, -, _ or ., not starting grpc-", key)
		case header && strings.IndexFunc(value, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
			return nil, fmt.Errorf("header %q: want printable ASCII in its value", key)
		}
		out[key] = value
	}
	return out, nil
}

func isHeaderKeyRune(r rune) bool {
	return r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z'
}

// parseMsgBytes reads --xds-max-msg-bytes.
func parseMsgBytes(v string) (int, error) {
	n, err := parseWhole(v)
	if err != nil || n < 1 || n > MaxXDSMsgBytes {
		return 0, fmt.Errorf("want a whole number from 1 to %d (16 MiB, a configuration file's bound)", MaxXDSMsgBytes)
	}
	return n, nil
}
