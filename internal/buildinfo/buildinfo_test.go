package buildinfo

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestLinkerValuesWinOverTheToolchains(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}
	got := stamped(fromToolchain(Info{Version: Unknown, Revision: Unknown}, bi), "1.2.3", "def")
	if got.Version != "1.2.3" || got.Revision != "def" {
		t.Errorf("stamped = %+v, want the linker's 1.2.3 and def", got)
	}
	got = stamped(fromToolchain(Info{Version: Unknown, Revision: Unknown}, bi), "", "")
	if got.Version != "(devel)" || got.Revision != "abc" {
		t.Errorf("unstamped = %+v, want the toolchain's (devel) and abc", got)
	}
	got = stamped(fromToolchain(Info{Version: Unknown, Revision: Unknown}, &debug.BuildInfo{}), "", "")
	if got.Version != Unknown || got.Revision != Unknown {
		t.Errorf("nothing recorded = %+v, want unknown twice", got)
	}
}

// The variables' names are the ones the Makefile, the Dockerfile and
// hack/release.sh pass to -X: a binary linked with them reports them.
func TestLinkerFlagsStampABinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "stamped")
	const pkg = "github.com/flightfeed/flightfeed/internal/buildinfo"
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X "+pkg+".version=7.8.9 -X "+pkg+".revision=0123abcd", "./testdata/stamped")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "7.8.9 0123abcd" {
		t.Errorf("stamped binary says %q, want %q", got, "7.8.9 0123abcd")
	}
}
