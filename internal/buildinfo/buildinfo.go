// Package buildinfo says which binary is running: its module version, VCS
// revision and Go version, as the Go toolchain recorded them at build time.
// It is the one source of both the flightfeed_build_info metric's labels and
// `flightfeed version`, so the two cannot disagree. It does no I/O.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info names a build. The JSON keys are the flightfeed_build_info labels.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goversion"`
}

// Unknown is what a field holds when the toolchain did not record it.
const Unknown = "unknown"

// Read returns the running binary's build.
func Read() Info {
	info := Info{Version: Unknown, Revision: Unknown, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			info.Revision = s.Value
		}
	}
	return info
}
