package operator_test

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// restCfg is the control plane every test of the package shares; tests
// keep apart by namespace.
var restCfg *rest.Config

func TestMain(m *testing.M) {
	os.Exit(kubetest.Main(m, func(cfg *rest.Config) error {
		restCfg = cfg
		return nil
	}))
}
