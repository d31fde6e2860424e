package controllers_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// restCfg is the control plane every test of the package shares; tests
// keep apart by namespace.
var restCfg *rest.Config

func TestMain(m *testing.M) {
	// FLIGHTFEED_TEST_LOG=1 shows the operator's logs.
	log := logr.Discard()
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1})
	}
	logf.SetLogger(log)
	cfg, stop, err := kubetest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restCfg = cfg
	code := m.Run()
	stop()
	os.Exit(code)
}
