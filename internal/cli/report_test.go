package cli

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// The test's passwords: none may be in the bundle.
var reportPasswords = []string{"PgS3cretInLog", "My5qlPassInEvent", "SecretObjectPass", "EnvLiteralPass", "SaslPwInAnnotation"}

// kubectl flightfeed report writes a tar.gz of the feed's objects, Events,
// Lease, pods and logs (a fake log source: envtest has no kubelet) with
// no Secret and no password in it.
func TestReportBundle(t *testing.T) {
	w := newPumpWorld(t)
	ctx := t.Context()
	c := w.c
	// A Secret of the feed's: never read.
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pek-db",
		Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
		StringData: map[string]string{"dsn": "postgres://app:SecretObjectPass@db:5432/ff"}}); err != nil {
		t.Fatal(err)
	}
	// An annotation quoting a password setting, an Event quoting a MySQL
	// DSN, a pod with a DSN in a literal environment variable.
	var ff v1alpha1.FlightFeed
	if err := c.Get(ctx, w.key, &ff); err != nil {
		t.Fatal(err)
	}
	ff.Annotations = map[string]string{"example.com/note": "kafka sasl password=SaslPwInAnnotation"}
	if err := c.Update(ctx, &ff); err != nil {
		t.Fatal(err)
	}
	for i, msg := range []string{"mailbox unreachable: dial root:My5qlPassInEvent@tcp(mysql:3306)/mbx: refused", "unrelated"} {
		name, kind := "pek", "FlightFeed"
		if i == 1 {
			name = "someone-else"
		}
		if err := c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ev-" + name},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: name, UID: ff.UID},
			Reason:         "MailboxUnreachable", Message: msg, Type: corev1.EventTypeWarning,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var pod corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: w.pods[0]}, &pod); err != nil {
		t.Fatal(err)
	}
	// A pod's spec is immutable but for a few fields: a new pod, same
	// labels, with the literal.
	envPod := pod.DeepCopy()
	envPod.ObjectMeta = metav1.ObjectMeta{Namespace: "default", Name: "pek-pump-7d9f-c", Labels: pod.Labels}
	envPod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FLIGHTFEED_DEBUG_DSN", Value: "host=db user=app password=EnvLiteralPass dbname=ff"}}
	if err := c.Create(ctx, envPod); err != nil {
		t.Fatal(err)
	}
	// The operator's pod, as the chart labels it, in its own namespace.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flightfeed-system"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "flightfeed-system", Name: "flightfeed-manager-0",
		Labels: map[string]string{"app.kubernetes.io/name": "flightfeed", "app.kubernetes.io/instance": "flightfeed", "app.kubernetes.io/component": "manager"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "flightfeed:test"}}}}); err != nil {
		t.Fatal(err)
	}

	var asked []string
	kube := fake.NewClientset()
	kube.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.GenericAction).GetValue().(*corev1.PodLogOptions)
		asked = append(asked, a.GetNamespace()+" container="+opts.Container)
		if ptr.Deref(opts.TailLines, -1) != 1000 {
			t.Errorf("a log asked for with --tail %d, want 1000", ptr.Deref(opts.TailLines, -1))
		}
		return true, &runtime.Unknown{Raw: []byte(`level=error msg="connect" dsn=postgres://app:PgS3cretInLog@db:5432/ff err="refused"` + "\n")}, nil
	})
	old := newLogSource
	newLogSource = func(*rest.Config) (kubernetes.Interface, error) { return kube, nil }
	t.Cleanup(func() { newLogSource = old })
	t.Setenv(tokenEnv, "")

	file := filepath.Join(t.TempDir(), "pek.tar.gz")
	code, out, errOut := runPlugin("report", "pek", "-n", "default", "--kubeconfig", w.kubeconfig, "-o", file)
	if code != 0 || !strings.Contains(out, "wrote "+file) {
		t.Fatalf("report: exit %d: %s%s", code, out, errOut)
	}
	files := readBundle(t, file)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	dir := "flightfeed-report-default-pek/"
	for _, want := range []string{"NOTES.txt", "flightfeed.yaml", "status.yaml", "flightfeeddays.yaml", "lease.yaml", "events.yaml",
		"deployment.yaml", "pods/pek-pump-7d9f-a.yaml", "pods/pek-pump-7d9f-b.yaml", "pods/pek-pump-7d9f-c.yaml",
		"logs/pek-pump-7d9f-a.log", "logs/pek-pump-7d9f-b.log", "logs/pek-pump-7d9f-c.log", "operator/flightfeed-system_flightfeed-manager-0.log"} {
		if _, ok := files[dir+want]; !ok {
			t.Errorf("the bundle lacks %s; it has %v", want, names)
		}
	}
	for _, name := range names {
		if strings.Contains(name, "other-feed") || strings.Contains(strings.ToLower(name), "secret") {
			t.Errorf("the bundle has %s", name)
		}
	}
	all := strings.Join(func() []string {
		var s []string
		for _, n := range names {
			s = append(s, files[n])
		}
		return s
	}(), "\n")
	for _, p := range reportPasswords {
		if strings.Contains(all, p) {
			t.Errorf("the bundle holds the password %s", p)
		}
	}
	for name, want := range map[string]string{
		"logs/pek-pump-7d9f-a.log":  "dsn=postgres://***@db:5432/ff",
		"events.yaml":               "dial ***@tcp(mysql:3306)/mbx",
		"pods/pek-pump-7d9f-c.yaml": "password=***",
		"flightfeed.yaml":           "password=***",
		"NOTES.txt":                 "dead.json, parked.json: not collected: the read API needs a token",
		"lease.yaml":                "holderIdentity: " + w.pods[0],
	} {
		if !strings.Contains(files[dir+name], want) {
			t.Errorf("%s lacks %q:\n%s", name, want, files[dir+name])
		}
	}
	if strings.Contains(files[dir+"events.yaml"], "unrelated") {
		t.Errorf("events.yaml holds an Event about another object:\n%s", files[dir+"events.yaml"])
	}
	if !slices.Contains(asked, "flightfeed-system container=") || !slices.Contains(asked, "default container=pump") {
		t.Errorf("log requests: %v", asked)
	}

	// The bundle is not overwritten, and -o takes a file, not a format.
	if code, _, errOut := runPlugin("report", "pek", "-n", "default", "--kubeconfig", w.kubeconfig, "-o", file); code == 0 {
		t.Errorf("report over an existing bundle: exit 0: %s", errOut)
	}
	if code, _, errOut := runPlugin("report", "pek", "-n", "default", "--kubeconfig", w.kubeconfig, "-o", "yaml"); code != exitUsage {
		t.Errorf("report -o yaml: exit %d: %s", code, errOut)
	}
}

func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		"dsn=postgres://app:s3cret@db:5432/ff?sslmode=require end": "dsn=postgres://***@db:5432/ff?sslmode=require end",
		"dial app:pa:ss@tcp(mysql:3306)/mbx?parseTime=true: x":     "dial ***@tcp(mysql:3306)/mbx?parseTime=true: x",
		"host=db password='s3 cret' user=app":                      "host=db password='***' user=app",
		`{"password":"s3cret","user":"app"}`:                       `{"password":"***","user":"app"}`,
		"sasl: {password: hunter22}":                               "sasl: {password: ***}",
		"mailbox row 42: BAD_XML at user@example.com":              "mailbox row 42: BAD_XML at user@example.com",
		"https://pek-pump.default.svc:8443/api/v1":                 "https://pek-pump.default.svc:8443/api/v1",
	} {
		if got := redactText(in); got != want {
			t.Errorf("redactText(%q) = %q, want %q", in, got, want)
		}
	}
}

func readBundle(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("the bundle's mode is %v, want 0600", fi.Mode().Perm())
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(b)
	}
}
