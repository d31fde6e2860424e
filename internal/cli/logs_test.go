package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// pumpWorld is a feed in envtest with its pump Deployment, two pump pods
// and a Lease naming the leader (no kubelet runs them: the objects only).
type pumpWorld struct {
	c          client.Client
	kubeconfig string
	key        types.NamespacedName
	pods       []string // pods[0] holds the Lease
}

// testFeed is a FlightFeed that the API server accepts.
func testFeed(ns, name string) *v1alpha1.FlightFeed {
	return &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.FlightFeedSpec{
		Airport:  v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
		Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-mailbox", Key: "dsn"}},
		Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-db", Key: "dsn"}},
		Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"kafka:9092"}},
	}}
}

func newPumpWorld(t *testing.T) pumpWorld {
	t.Helper()
	restCfg, _ := kubetest.Start(t)
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	w := pumpWorld{c: c, key: types.NamespacedName{Namespace: "default", Name: "pek"},
		pods: []string{"pek-pump-7d9f-b", "pek-pump-7d9f-a"}}
	w.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, w.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, testFeed("default", "pek")); err != nil {
		t.Fatal(err)
	}
	podLabels := feednames.PodLabels("pek")
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: feednames.Pump("pek")},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: pumpContainer, Image: "flightfeed:test"}}}}}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	pods := append(append([]string{}, w.pods...), "other-feed-pump-x")
	for _, name := range pods {
		l := podLabels
		if strings.HasPrefix(name, "other") {
			l = feednames.PodLabels("other")
		}
		if err := c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: l},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: pumpContainer, Image: "flightfeed:test"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: feednames.Lease(w.key)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(w.pods[0]), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}}
	if err := c.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestLogsSelectsLeaderOrAllPumpPods(t *testing.T) {
	w := newPumpWorld(t)
	ctx := t.Context()

	got, err := selectPumpPods(ctx, w.c, w.key, false)
	if err != nil || strings.Join(got, ",") != w.pods[0] {
		t.Errorf("leader: %v, %v; want %s (the Lease's holder)", got, err, w.pods[0])
	}
	got, err = selectPumpPods(ctx, w.c, w.key, true)
	if err != nil || strings.Join(got, ",") != "pek-pump-7d9f-a,pek-pump-7d9f-b" {
		t.Errorf("--all-pods: %v, %v; want both pods of the Deployment's selector, sorted, not other-feed's", got, err)
	}
	if _, err := selectPumpPods(ctx, w.c, types.NamespacedName{Namespace: "default", Name: "nope"}, false); err == nil ||
		!strings.Contains(err.Error(), "FlightFeed default/nope not found") {
		t.Errorf("a missing feed: %v", err)
	}

	// The Lease names a pod that is gone: said, with --all-pods offered.
	var lease coordinationv1.Lease
	if err := w.c.Get(ctx, types.NamespacedName{Namespace: "default", Name: feednames.Lease(w.key)}, &lease); err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("pek-pump-gone")
	if err := w.c.Update(ctx, &lease); err != nil {
		t.Fatal(err)
	}
	if _, err := selectPumpPods(ctx, w.c, w.key, false); err == nil || !strings.Contains(err.Error(), "pek-pump-gone, which is no pod") ||
		!strings.Contains(err.Error(), "--all-pods") {
		t.Errorf("a holder that is no pod: %v", err)
	}
	// Nobody holds it: no leader.
	lease.Spec.HolderIdentity = nil
	if err := w.c.Update(ctx, &lease); err != nil {
		t.Fatal(err)
	}
	if _, err := selectPumpPods(ctx, w.c, w.key, false); err == nil || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("a Lease nobody holds: %v", err)
	}
	// No pods: said.
	for _, p := range w.pods {
		if err := w.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p}}, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := selectPumpPods(ctx, w.c, w.key, true); err == nil || !strings.Contains(err.Error(), "has no pump pods") {
		t.Errorf("no pump pods: %v", err)
	}
}

func TestStreamPodLogs(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		return true, &runtime.Unknown{Raw: fmt.Appendf(nil, "tail=%d\nsecond line", ptr.Deref(opts.TailLines, -1))}, nil
	})
	for _, follow := range []bool{false, true} {
		var out bytes.Buffer
		opts := corev1.PodLogOptions{Container: pumpContainer, Follow: follow, TailLines: ptr.To[int64](5)}
		if err := streamPodLogs(t.Context(), kube, "default", []string{"a", "b"}, opts, true, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var a, b []string
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "[a] "):
				a = append(a, l)
			case strings.HasPrefix(l, "[b] "):
				b = append(b, l)
			default:
				t.Errorf("follow=%v: line without its pod: %q", follow, l)
			}
		}
		if strings.Join(a, "|") != "[a] tail=5|[a] second line" || strings.Join(b, "|") != "[b] tail=5|[b] second line" {
			t.Errorf("follow=%v: %q", follow, out.String())
		}
	}
	// One pod, no prefix: the log as it is.
	var out bytes.Buffer
	if err := streamPodLogs(t.Context(), kube, "default", []string{"a"}, corev1.PodLogOptions{}, false, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "tail=-1\nsecond line\n" {
		t.Errorf("one pod: %q", out.String())
	}
}

// kubectl flightfeed logs end to end: the pods from envtest's objects,
// their logs from a fake clientset (envtest has no kubelet).
func TestLogsCommand(t *testing.T) {
	w := newPumpWorld(t)
	var asked []string
	kube := fake.NewClientset()
	kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		asked = append(asked, fmt.Sprintf("%s container=%s follow=%v tail=%d since=%d", a.GetNamespace(),
			opts.Container, opts.Follow, ptr.Deref(opts.TailLines, -1), ptr.Deref(opts.SinceSeconds, 0)))
		return true, &runtime.Unknown{Raw: []byte("msg=\"pump started\"\n")}, nil
	})
	old := newLogSource
	newLogSource = func(*rest.Config) (kubernetes.Interface, error) { return kube, nil }
	t.Cleanup(func() { newLogSource = old })

	code, out, errOut := runPlugin("logs", "pek", "-n", "default", "--kubeconfig", w.kubeconfig, "--tail", "20", "--since", "5m")
	if code != 0 || out != "msg=\"pump started\"\n" {
		t.Errorf("logs pek: exit %d: %q %s", code, out, errOut)
	}
	code, out, errOut = runPlugin("logs", "default/pek", "--kubeconfig", w.kubeconfig, "--all-pods", "-f")
	if code != 0 || out != "[pek-pump-7d9f-a] msg=\"pump started\"\n[pek-pump-7d9f-b] msg=\"pump started\"\n" &&
		out != "[pek-pump-7d9f-b] msg=\"pump started\"\n[pek-pump-7d9f-a] msg=\"pump started\"\n" {
		t.Errorf("logs pek --all-pods -f: exit %d: %q %s", code, out, errOut)
	}
	want := []string{"default container=pump follow=false tail=20 since=300",
		"default container=pump follow=true tail=-1 since=0", "default container=pump follow=true tail=-1 since=0"}
	if strings.Join(asked, "\n") != strings.Join(want, "\n") {
		t.Errorf("log requests:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
	if code, _, errOut := runPlugin("logs", "nope", "-n", "default", "--kubeconfig", w.kubeconfig); code != exitUsage || !strings.Contains(errOut, "not found") {
		t.Errorf("logs of a missing feed: exit %d: %s", code, errOut)
	}
}
