package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// status without NAME shows the feeds of the context's namespace (as
// kubectl get does), -A those of every namespace; -w prints again when the
// feed changes, until interrupted.
func TestStatusNamespacesAndWatch(t *testing.T) {
	restCfg, _ := kubetest.Start(t)
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The context's namespace is airport-pek.
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = "airport-pek"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"airport-pek", "airport-can"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []types.NamespacedName{{Namespace: "airport-pek", Name: "pek"}, {Namespace: "airport-can", Name: "can"}} {
		if err := c.Create(ctx, testFeed(key.Namespace, key.Name)); err != nil {
			t.Fatal(err)
		}
	}

	for _, run := range []func(...string) (int, string, string){runPlugin, runCLI} {
		code, out, errOut := run("status", "--kubeconfig", kubeconfig)
		if code != 0 || !strings.Contains(out, "FlightFeed airport-pek/pek") || strings.Contains(out, "airport-can") {
			t.Errorf("status without -n: exit %d, want the context's namespace only:\n%s%s", code, out, errOut)
		}
		code, out, errOut = run("status", "-A", "--kubeconfig", kubeconfig)
		if code != 0 || !strings.Contains(out, "FlightFeed airport-pek/pek") || !strings.Contains(out, "FlightFeed airport-can/can") {
			t.Errorf("status -A: exit %d, want both feeds:\n%s%s", code, out, errOut)
		}
		code, out, errOut = run("status", "-n", "airport-can", "--kubeconfig", kubeconfig)
		if code != 0 || strings.Contains(out, "airport-pek") || !strings.Contains(out, "FlightFeed airport-can/can") {
			t.Errorf("status -n airport-can: exit %d:\n%s%s", code, out, errOut)
		}
		if code, _, errOut := run("status", "pek", "-A", "--kubeconfig", kubeconfig); code != exitUsage {
			t.Errorf("status NAME -A: exit %d, want a usage error: %s", code, errOut)
		}
	}

	// --watch: printed once, once more after a change, and ended by the
	// interrupt (the context) with exit 0.
	watchCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runPluginCommand(watchCtx, pluginKubectl, []string{"status", "pek", "-w", "--kubeconfig", kubeconfig}, &out, &errOut)
	}()
	prints := func() int { return strings.Count(out.String(), "FlightFeed airport-pek/pek") }
	await.Eventually(t, "the first print", time.Minute, func() (bool, string) { return prints() == 1, out.String() + errOut.String() })
	var ff v1alpha1.FlightFeed
	if err := c.Get(ctx, types.NamespacedName{Namespace: "airport-pek", Name: "pek"}, &ff); err != nil {
		t.Fatal(err)
	}
	ff.Status.SchemaVersion = 21
	ff.Status.PumpPods = &v1alpha1.PumpPodsStatus{Deployment: "pek-pump", Replicas: 2, ReadyReplicas: 2, Ready: "2/2", UpdatedReplicas: 2}
	if err := c.Status().Update(ctx, &ff); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "a second print with the new status", time.Minute, func() (bool, string) {
		text := spaced(out.String())
		return prints() == 2 && strings.Contains(text, "Schema: version 21") && strings.Contains(text, "Pump pods: 2/2 ready"), out.String() + errOut.String()
	})
	// A change to another namespace's feed is not this watch's.
	var other v1alpha1.FlightFeed
	if err := c.Get(ctx, types.NamespacedName{Namespace: "airport-can", Name: "can"}, &other); err != nil {
		t.Fatal(err)
	}
	other.Status.SchemaVersion = 3
	if err := c.Status().Update(ctx, &other); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * statusSettle)
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("status -w ended with exit %d: %s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("status -w did not end when interrupted")
	}
	if n := prints(); n != 2 {
		t.Errorf("status -w printed %d times, want 2 (once, once after the change):\n%s", n, out.String())
	}
}
