package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// build says what the binary was built from, for `askbridge version` and
// the askbridge_build_info metric.
type build struct {
	// Version is the version stamped with -ldflags "-X main.version=...",
	// else the main module's version from the build information (a tag
	// such as v1.2.0, a pseudo-version, or "(devel)" for a build in a
	// checkout that go could not version).
	Version string
	// Revision, Time and Modified are the commit the binary was built from
	// (vcs.revision), its time (vcs.time) and whether the checkout had
	// local changes (vcs.modified); the go command records them when it
	// builds a main package inside a repository. Empty and false when
	// unknown (go run, go test, -buildvcs=false).
	Revision, Time string
	Modified       bool
	// GoVersion is the Go release the binary was built with.
	GoVersion string
}

// currentBuild is what this binary was built from.
func currentBuild() build {
	info, _ := debug.ReadBuildInfo()
	return buildFrom(version, info)
}

// buildFrom combines the stamped version (version, "dev" when not stamped)
// with the build information info (nil when the binary has none).
func buildFrom(stamped string, info *debug.BuildInfo) build {
	b := build{Version: stamped, GoVersion: runtime.Version()}
	if info == nil {
		return b
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	if (stamped == "" || stamped == "dev") && info.Main.Version != "" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the line `askbridge version` prints: the name and version,
// then the Go release and what is known of the commit, as in
// "askbridge v1.2.0 (go1.27.3, revision 0123abc…, committed
// 2026-01-02T03:04:05Z, modified)".
func (b build) String() string {
	details := []string{b.GoVersion}
	if b.Revision != "" {
		details = append(details, "revision "+b.Revision)
	}
	if b.Time != "" {
		details = append(details, "committed "+b.Time)
	}
	if b.Modified {
		details = append(details, "modified")
	}
	return name + " " + b.Version + " (" + strings.Join(details, ", ") + ")"
}
