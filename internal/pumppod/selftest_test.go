package pumppod_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/internal/cli"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// `flightfeed selftest` (the chart's helm test) passes against the real API
// server with the project's CRDs and a manager pod that answers /readyz,
// and fails, naming the pod, when the manager is not ready.
func TestSelftestCommand(t *testing.T) {
	h := newHarness(t)
	var ready atomic.Bool
	ready.Store(true)
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready.Load() {
			http.Error(w, "[-]informers failed", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(probe.Close)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(probe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// A manager pod as the kubelet would report it, at the probe server's
	// address (envtest has no kubelet).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "flightfeed-abc", Namespace: h.ns, Labels: map[string]string{
			"app.kubernetes.io/name": "flightfeed", "app.kubernetes.io/component": "manager"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "flightfeed:dev"}}},
	}
	h.create(pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}}}
	if err := h.c.Status().Update(h.ctx(), pod); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	args := []string{"selftest", "--kubeconfig", kubeconfig, "--namespace", h.ns,
		"--selector", "app.kubernetes.io/name=flightfeed,app.kubernetes.io/component=manager", "--probe-port", port}

	out := flightfeedCLI(t, args...)
	for _, want := range []string{"ok CRD flightfeeds.flightfeed.aero Established", "ok CRD flightfeeddays.flightfeed.aero Established",
		"ok pod flightfeed-abc answers /readyz"} {
		if !strings.Contains(out, want) {
			t.Fatalf("selftest output lacks %q:\n%s", want, out)
		}
	}

	ready.Store(false)
	root := cli.NewRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetArgs(append(args, "--timeout", "3s"))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err = root.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "pod flightfeed-abc") || !strings.Contains(err.Error(), strconv.Itoa(http.StatusInternalServerError)) {
		t.Fatalf("selftest with an unready manager: %v\n%s", err, stdout.String())
	}
}
