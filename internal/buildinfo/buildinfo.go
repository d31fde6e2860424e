// Package buildinfo says which binary is running: its version, VCS revision
// and Go version. It is the one source of both the flightfeed_build_info
// metric's labels and `flightfeed version`, so the two cannot disagree. It
// does no I/O.
//
// Every build path of the repository stamps the version and revision with
// the linker (`make build`, `make image`, `make plugin-dist`, `make release`,
// the Dockerfile's VERSION and COMMIT build arguments):
//
//	go build -ldflags "-X github.com/flightfeed/flightfeed/internal/buildinfo.version=0.9.0 \
//	    -X github.com/flightfeed/flightfeed/internal/buildinfo.revision=$(git rev-parse HEAD)"
//
// A binary built without them (a plain `go build` or `go run`) reports what
// the Go toolchain recorded instead: the module version ("(devel)" in a
// checkout) and the vcs.revision setting, when there was one.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version and revision are set by the linker (-X); empty otherwise.
var version, revision string

// Info names a build. The JSON keys are the flightfeed_build_info labels.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goversion"`
}

// Unknown is what a field holds when neither the linker nor the toolchain
// recorded it.
const Unknown = "unknown"

// Read returns the running binary's build.
func Read() Info {
	info := Info{Version: Unknown, Revision: Unknown, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromToolchain(info, bi)
	}
	return stamped(info, version, revision)
}

// fromToolchain fills in what the Go toolchain recorded in the binary.
func fromToolchain(info Info, bi *debug.BuildInfo) Info {
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

// stamped lets the linker's values win over the toolchain's.
func stamped(info Info, version, revision string) Info {
	if version != "" {
		info.Version = version
	}
	if revision != "" {
		info.Revision = revision
	}
	return info
}
