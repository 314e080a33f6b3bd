package config

import (
	"fmt"
	"slices"
	"testing"
)

// TestUpgrades reads the upgrade allowlist from the flag, the variable and
// the file: the default is WebSocket, none or an empty value allows
// nothing, names are lower-cased and kept once, and a value that is not a
// protocol name, or names a protocol that tunnels HTTP requests, is refused
// naming where it came from.
func TestUpgrades(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		file string // the config file's content; empty: no file
		want []string
		err  string
	}{
		{name: "default", want: []string{"websocket"}},
		{name: "flag", args: []string{"--upgrade", "WebSocket,x-chat"}, want: []string{"websocket", "x-chat"}},
		{name: "repeated", args: []string{"--upgrade", "websocket", "--upgrade", "x-chat", "--upgrade", "websocket"}, want: []string{"websocket", "x-chat"}},
		{name: "none", args: []string{"--upgrade", "none"}, want: nil},
		{name: "empty", args: []string{"--upgrade="}, want: nil},
		{name: "variable", env: map[string]string{"ADMIT_UPGRADE": "none"}, want: nil},
		{name: "file list", file: "upgrades: [websocket, x-chat]\n", want: []string{"websocket", "x-chat"}},
		{name: "file none", file: "upgrades: none\n", want: []string{}},
		{name: "file empty list", file: "upgrades: []\n", want: []string{}},
		{name: "flag over file", args: []string{"--upgrade", "x-chat"}, file: "upgrades: none\n", want: []string{"x-chat"}},
		{name: "h2c", args: []string{"--upgrade", "websocket,H2C"},
			err: `admit: --upgrade "websocket,H2C": "h2c" may not be allowed: a connection switched to it carries HTTP requests that no limit sees`},
		{name: "an h2c draft", args: []string{"--upgrade", "h2c-14"},
			err: `admit: --upgrade "h2c-14": "h2c-14" may not be allowed: a connection switched to it carries HTTP requests that no limit sees`},
		{name: "tls", env: map[string]string{"ADMIT_UPGRADE": "TLS"},
			err: `admit: ADMIT_UPGRADE "TLS": "tls" may not be allowed: a connection switched to it carries HTTP requests that no limit sees`},
		{name: "http", args: []string{"--upgrade", "http"},
			err: `admit: --upgrade "http": "http" may not be allowed: a connection switched to it carries HTTP requests that no limit sees`},
		{name: "a version", args: []string{"--upgrade", "HTTP/2.0"},
			err: `admit: --upgrade "HTTP/2.0": "http/2.0" is not a protocol name (an RFC 9110 token, such as websocket)`},
		{name: "space inside", env: map[string]string{"ADMIT_UPGRADE": "web socket"},
			err: `admit: ADMIT_UPGRADE "web socket": "web socket" is not a protocol name (an RFC 9110 token, such as websocket)`},
		{name: "empty element", args: []string{"--upgrade", "websocket,,x"},
			err: `admit: --upgrade "websocket,,x": "" is not a protocol name (an RFC 9110 token, such as websocket)`},
		{name: "none in a list", args: []string{"--upgrade", "websocket,none"},
			err: `admit: --upgrade "websocket,none": "none" stands alone: it allows no upgrade`},
		{name: "file h2c", file: "upgrades: [websocket, h2c]\n",
			err: `line 1: upgrades[1]: "h2c" may not be allowed: a connection switched to it carries HTTP requests that no limit sees`},
		{name: "file map", file: "upgrades: {websocket: true}\n", err: "line 1: upgrades: want a single value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			path := ""
			if tc.file != "" {
				path = writeConfig(t, tc.file)
				args = append(args, "--config", path)
			}
			c, err := parse(t, args, tc.env)
			want := tc.err
			if want != "" && tc.file != "" && tc.args == nil {
				want = fmt.Sprintf("admit: --config %q: %s", path, tc.err)
			}
			if want != "" {
				if err == nil || err.Error() != want {
					t.Fatalf("got %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Upgrades, tc.want) || (c.Upgrades == nil) != (tc.want == nil) {
				t.Errorf("Upgrades: got %#v, want %#v", c.Upgrades, tc.want)
			}
		})
	}
}

// TestUpgradesNeedARestart refuses a reload that changes the allowlist: the
// proxy reads it once, at the start.
func TestUpgradesNeedARestart(t *testing.T) {
	old, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parse(t, []string{"--config", writeConfig(t, "upgrades: none\n")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "admit: reload: --upgrade (ADMIT_UPGRADE) differs from what admit started with, and only a restart applies it; change it and restart, or change it back"
	if err := CheckRestartOnly(old, c); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
