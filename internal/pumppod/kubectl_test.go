package pumppod_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// The README's kubectl commands work against the project's CRDs on a real
// API server: the singular name, the short name, kubectl wait on the Ready
// condition and FlightFeedDays by their feed label. The CRDs' category
// once equalled the singular name, and kubectl expands categories first:
// "kubectl get flightfeed pek" then also selected FlightFeedDays and was
// refused ("you must specify only one resource").
func TestKubectlCommandsOfTheREADME(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed (apt-get install -y kubectl, or the cluster's build in hack/cluster): %v", err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	ns := "kubectl-readme"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	ff := &v1alpha1.FlightFeed{}
	if err := yaml.Unmarshal([]byte(specManifest), ff); err != nil {
		t.Fatal(err)
	}
	ff.Namespace = ns
	if err := c.Create(ctx, ff); err != nil {
		t.Fatal(err)
	}
	ff.Status.Conditions = []metav1.Condition{{Type: string(v1alpha1.ConditionReady), Status: metav1.ConditionTrue,
		Reason: string(v1alpha1.ReasonRunning), Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: ff.Generation}}
	ff.Status.ObservedGeneration = ff.Generation
	if err := c.Status().Update(ctx, ff); err != nil {
		t.Fatal(err)
	}
	day := &v1alpha1.FlightFeedDay{}
	day.Namespace, day.Name = ns, "pek-2026-09-09"
	day.Labels = map[string]string{"flightfeed.aero/feed": "pek"}
	day.Spec = v1alpha1.FlightFeedDaySpec{FeedName: "pek", Day: "2026-09-09"}
	if err := c.Create(ctx, day); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, args := range [][]string{
		{"get", "flightfeed", "pek", "-o", "name"},
		{"get", "ff", "pek", "-o", "name"},
		{"get", "flightfeeds", "-o", "name"},
	} {
		if out := strings.TrimSpace(run(args...)); out != "flightfeed.flightfeed.aero/pek" {
			t.Errorf("kubectl %s printed %q", strings.Join(args, " "), out)
		}
	}
	if out := run("wait", "--for=condition=Ready", "flightfeed/pek", "--timeout=30s"); !strings.Contains(out, "condition met") {
		t.Errorf("kubectl wait printed %q", out)
	}
	if out := strings.TrimSpace(run("get", "flightfeeddays", "-l", "flightfeed.aero/feed=pek", "-o", "name")); out != "flightfeedday.flightfeed.aero/pek-2026-09-09" {
		t.Errorf("kubectl get flightfeeddays -l printed %q", out)
	}
	// The category still lists both kinds.
	if out := run("get", "aodb", "-o", "name"); !strings.Contains(out, "flightfeed.flightfeed.aero/pek") || !strings.Contains(out, "flightfeedday.flightfeed.aero/pek-2026-09-09") {
		t.Errorf("kubectl get aodb printed %q", out)
	}
}
