package e2e_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// The binary and the control plane every test of the package shares; tests
// keep apart by namespace (each manager watches only its test's namespace)
// and by databases of their own.
var (
	binary     string
	kubeconfig string
	restCfg    *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Every test here is slow: in -short mode they all skip, so neither the
	// binary nor the control plane is needed.
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "flightfeed-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// The binary under test, built once from the repository's main.go.
	if binary, err = proctest.Build(dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}

	// The managers' logs are shown for a failed test; FLIGHTFEED_TEST_LOG=1
	// streams them, and the test process's own clients' logs with them.
	return kubetest.Main(m, func(cfg *rest.Config) error {
		restCfg = cfg
		kubeconfig = filepath.Join(dir, "kubeconfig")
		return kubetest.WriteKubeconfig(cfg, kubeconfig)
	})
}
