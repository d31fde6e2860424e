package main

import (
	"os/exec"
	"strings"
	"testing"
)

// goDeps lists the packages the package pattern links (go list -deps).
func goDeps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pattern).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pattern, err)
	}
	return strings.Fields(string(out))
}

// The flightfeed binary, which every pump pod runs, links neither the
// kubectl plugin's library (k8s.io/cli-runtime, and the kustomize it
// brings) nor the API server's (k8s.io/apiserver, and its CEL): the plugin
// is a binary of its own (cmd/kubectl-flightfeed), and the operator's
// /metrics checks tokens with the project's own TokenReview and
// SubjectAccessReview (serving.Access), not controller-runtime's filter.
func TestFlightfeedBinaryLinksNoPluginOrAPIServerLibrary(t *testing.T) {
	banned := []string{"k8s.io/cli-runtime/", "sigs.k8s.io/kustomize/", "k8s.io/apiserver/", "github.com/google/cel-go/",
		"github.com/flightfeed/flightfeed/internal/cli/kubectl", "sigs.k8s.io/controller-runtime/pkg/metrics/filters"}
	deps := goDeps(t, ".")
	for _, pkg := range deps {
		for _, b := range banned {
			if strings.HasPrefix(pkg+"/", b) || pkg == b {
				t.Errorf("the flightfeed binary links %s", pkg)
			}
		}
	}
	if len(deps) < 100 {
		t.Fatalf("go list -deps . named only %d packages", len(deps))
	}
}

// The plugin's binary is the one that links kubectl's library.
func TestPluginBinaryLinksKubectlsLibrary(t *testing.T) {
	deps := strings.Join(goDeps(t, "./cmd/kubectl-flightfeed"), "\n") + "\n"
	for _, want := range []string{"k8s.io/cli-runtime/pkg/genericclioptions\n", "github.com/flightfeed/flightfeed/internal/cli/kubectl\n"} {
		if !strings.Contains(deps, want) {
			t.Errorf("cmd/kubectl-flightfeed does not link %s", strings.TrimSpace(want))
		}
	}
}
