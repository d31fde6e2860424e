// Package kubetest starts a real kube-apiserver and etcd (controller-runtime
// envtest) with FlightFeed's CRDs installed, one per test (Start) or one per
// test binary (Main, from TestMain), and gives tests a client of it that
// knows the operator's types (Client). The binaries are built from Go
// modules by hack/envtest-assets.sh; KUBEBUILDER_ASSETS points at them.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flightfeed/flightfeed/internal/serving"
)

// Start runs a control plane for the test and stops it when t ends.
func Start(t testing.TB) (*rest.Config, *envtest.Environment) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("kubetest: KUBEBUILDER_ASSETS is not set; run the suite with `make test` " +
			"(or export KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh))")
	}
	env := environment(RepoRoot(t))
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("kubetest: start control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("kubetest: stop control plane: %v", err)
		}
	})
	return cfg, env
}

// environment is the control plane with the project's CRDs. envtest waits
// 20 s for kube-apiserver by default; on two busy cores (several test
// binaries starting their control planes at once) it can need longer, so
// the wait is 2 minutes: a slow start is not a failure of the code under test.
func environment(repoRoot string) *envtest.Environment {
	return &envtest.Environment{
		CRDDirectoryPaths:        []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
}

// RepoRoot is the repository's top folder, found from this source file.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("kubetest: cannot locate the repository")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// StartMain runs one control plane for a whole test binary (call it from
// TestMain; tests then isolate themselves by namespace). The returned stop
// function tears it down.
func StartMain() (*rest.Config, func(), error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, nil, errors.New("kubetest: KUBEBUILDER_ASSETS is not set; run the suite with `make test` " +
			"(or export KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh))")
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, nil, errors.New("kubetest: cannot locate the repository")
	}
	env := environment(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: start control plane: %w", err)
	}
	return cfg, func() { _ = env.Stop() }, nil
}

// Main is a test binary's TestMain body for a package whose tests share
// one control plane: it sets controller-runtime's logger (silent, or to
// stderr when FLIGHTFEED_TEST_LOG is set), starts the control plane, hands
// its config to setup, runs the tests and stops it. It returns the exit
// code: `func TestMain(m *testing.M) { os.Exit(kubetest.Main(m, ...)) }`.
func Main(m *testing.M, setup func(cfg *rest.Config) error) int {
	log := logr.Discard()
	if os.Getenv("FLIGHTFEED_TEST_LOG") != "" {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1})
	}
	logf.SetLogger(log)
	cfg, stop, err := StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if err := setup(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Client is a client of the control plane at cfg that knows the
// operator's types (serving.Scheme: the built-in kinds and FlightFeed)
// and CustomResourceDefinitions.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := serving.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
