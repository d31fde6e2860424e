//go:build reliability

package partition_test

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

// The binary and the control plane the package's tests share.
var (
	binary  string
	binDir  string
	restCfg *rest.Config
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "flightfeed-reliability-partition-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binDir = dir
	if binary, err = proctest.Build(dir); err != nil {
		fmt.Fprintf(os.Stderr, "partition: %v\n", err)
		return 1
	}
	return kubetest.Main(m, func(cfg *rest.Config) error {
		restCfg = cfg
		return nil
	})
}

// kubeconfigVia writes a kubeconfig for the control plane whose server is
// host:port (a proxy in front of the API server) and returns its path.
func kubeconfigVia(t *testing.T, hostPort string) string {
	t.Helper()
	cfg := rest.CopyConfig(restCfg)
	cfg.Host = "https://" + hostPort
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
