package proctest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/testsupport/feedtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// Shared is what the tests of a package that runs the binary against one
// control plane share (Main): the binary, the control plane's config and
// a kubeconfig file of it.
type Shared struct {
	Binary     string
	Kubeconfig string
	RestConfig *rest.Config
	// SkipShort: in -short mode every test of the package skips, so
	// neither the binary nor the control plane is built.
	SkipShort bool
}

// Main is a TestMain body: it builds the binary once into a temporary
// folder named after name, starts one control plane (kubetest.Main), fills
// s and runs the tests; it returns the exit code. Tests keep apart by
// namespace and by databases of their own. The processes' logs are shown
// for a failed test; FLIGHTFEED_TEST_LOG=1 streams them.
func Main(m *testing.M, name string, s *Shared) int {
	flag.Parse()
	if s.SkipShort && testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "flightfeed-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if s.Binary, err = Build(dir); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return kubetest.Main(m, func(cfg *rest.Config) error {
		s.RestConfig = cfg
		s.Kubeconfig = filepath.Join(dir, "kubeconfig")
		return kubetest.WriteKubeconfig(cfg, s.Kubeconfig)
	})
}

// KubeconfigVia writes a kubeconfig for the control plane at cfg whose
// server is hostPort (a proxy in front of the API server) and returns its
// path.
func KubeconfigVia(t testing.TB, cfg *rest.Config, hostPort string) string {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + hostPort
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(c, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ApplyFeed creates the feed f as the FlightFeed name in namespace ns with
// c (feedtest.Feed.Manifest), its DSNs in the Secrets <name>-mailbox and
// <name>-db it names (labelled, and naming the feed in
// flightfeed.aero/feeds), and returns its key.
func ApplyFeed(t testing.TB, c client.Client, ns, name string, f feedtest.Feed) types.NamespacedName {
	t.Helper()
	for suffix, dsn := range map[string]string{"-mailbox": f.MailboxDSN, "-db": f.DatabaseDSN} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: name}, Name: name + suffix, Namespace: ns},
			StringData: map[string]string{"dsn": dsn}}
		if err := c.Create(t.Context(), s); err != nil {
			t.Fatalf("create Secret %s%s: %v", name, suffix, err)
		}
	}
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(f.Manifest(name, ns)), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &obj); err != nil {
		t.Fatalf("create FlightFeed %s: %v", name, err)
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}

// LeaseHolder is the holder of the Lease name in namespace ns ("" while
// free or absent).
func LeaseHolder(ctx context.Context, c client.Client, ns, name string) (string, error) {
	var l coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &l); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}
