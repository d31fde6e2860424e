// Package kubetest starts a real kube-apiserver and etcd (controller-runtime
// envtest) with FlightFeed's CRDs installed. The binaries are built from Go
// modules by hack/envtest-assets.sh; KUBEBUILDER_ASSETS points at them.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start runs a control plane for the test and stops it when t ends.
func Start(t testing.TB) (*rest.Config, *envtest.Environment) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("kubetest: KUBEBUILDER_ASSETS is not set; run the suite with `make test` " +
			"(or export KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh))")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(t), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
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
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: start control plane: %w", err)
	}
	return cfg, func() { _ = env.Stop() }, nil
}
