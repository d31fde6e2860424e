package e2e_test

import (
	"os"
	"testing"

	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// shared is the binary and the control plane every test of the package
// shares; tests keep apart by namespace (each manager watches only its
// test's namespace) and by databases of their own. Every test here is
// slow: in -short mode they all skip, and neither is built.
var shared = proctest.Shared{SkipShort: true}

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "e2e", &shared)) }
