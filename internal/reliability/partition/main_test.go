//go:build reliability

package partition_test

import (
	"os"
	"testing"

	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// shared is the binary and the control plane the package's tests share.
var shared proctest.Shared

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "reliability-partition", &shared)) }
