package config

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Version returns what admit --version prints: the module version (the tag
// go install fetched, or for a build from a checkout the pseudo-version Go
// stamps from its commit), the revision and its time when the build
// recorded them, and the Go version. A build from a source tree that
// records no revision says so, since its version then names no source.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "admit (unknown version)"
	}
	// Embedded in another program, admit is one of its dependencies, and
	// the build's revision is that program's.
	for _, d := range info.Deps {
		if d.Path == "github.com/admitgo/admit" && info.Main.Path != d.Path {
			return "admit " + d.Version + " (in " + info.Main.Path + ") " + info.GoVersion
		}
	}
	v := "admit " + info.Main.Version
	var rev, when, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	switch {
	case rev != "":
		v += fmt.Sprintf(" (revision %s, %s%s)", rev, when, modified)
	case info.Main.Version == "" || info.Main.Version == "(devel)":
		v += " (revision unknown: built without version control information)"
	}
	return v + " " + info.GoVersion
}

// ErrVersion ends parsing after --version has been answered.
var ErrVersion = errors.New("version printed")
