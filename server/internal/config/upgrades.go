package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// fieldUpgrades is the config file's key of --upgrade.
const fieldUpgrades = "upgrades"

// DefaultUpgrades is what --upgrade allows unless given: WebSocket, the one
// upgrade browsers make.
const DefaultUpgrades = "websocket"

// tunnelProtocol reports whether no allowlist may name protocol p, lower
// case: a connection switched to it carries further HTTP requests straight
// to the upstream, past every limit. h2c is HTTP/2 over cleartext (RFC 7540
// section 3.2), which hypercorn, nghttpx and Apache's mod_http2 switch to,
// and its drafts were h2c-14 and the like, so every name starting "h2"
// goes; "http" is the name of the upgrades to another HTTP version (RFC
// 9110's example Upgrade: HTTP/2.0); "tls" is RFC 2817's upgrade to HTTP
// over TLS on the same connection.
func tunnelProtocol(p string) bool {
	return p == "http" || p == "tls" || strings.HasPrefix(p, "h2")
}

// parseUpgrades reads protocols separated by commas, or "none" (or an empty
// value) for none, and appends them to dst, lower-cased and each once.
// Each must be an RFC 9110 token naming a protocol without a version.
func parseUpgrades(dst *[]string, v string) error {
	if strings.TrimSpace(v) == "" || strings.EqualFold(strings.TrimSpace(v), "none") {
		return nil
	}
	for p := range strings.SplitSeq(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		switch {
		case p == "none":
			return errors.New(`"none" stands alone: it allows no upgrade`)
		case p == "" || !httpguts.ValidHeaderFieldName(p):
			return fmt.Errorf("%q is not a protocol name (an RFC 9110 token, such as websocket)", p)
		case tunnelProtocol(p):
			return fmt.Errorf("%q may not be allowed: a connection switched to it carries HTTP requests that no limit sees", p)
		}
		if !slices.Contains(*dst, p) {
			*dst = append(*dst, p)
		}
	}
	return nil
}

// readUpgrades reads the file's upgrades: a list of protocol names, or one
// value as --upgrade takes it.
func (c *Config) readUpgrades(n *yaml.Node) error {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	list := []string{} // given, even if empty: no upgrade
	for i, item := range items {
		where := fieldUpgrades
		if n.Kind == yaml.SequenceNode {
			where = fmt.Sprintf("%s[%d]", fieldUpgrades, i)
		}
		if err := scalar(where, func(v string) error { return parseUpgrades(&list, v) })(item); err != nil {
			return err
		}
	}
	c.fileUpgrades = &list
	return nil
}
