package pumppod_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// specManifest is the example FlightFeed (docs/first-feed.md) that must be accepted as is.
const specManifest = `
apiVersion: flightfeed.aero/v1alpha1
kind: FlightFeed
metadata: {name: pek, namespace: default}
spec:
  airport: {iata: PEK, timeZone: Asia/Shanghai}
  mailbox: {dsnSecretRef: {name: pek-mailbox, key: dsn}, pollInterval: 100ms, batchSize: 200}
  database: {dsnSecretRef: {name: pek-db, key: dsn}}
  kafka: {brokers: ["127.0.0.1:9092"], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
  requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}
`

func TestCRDInstallsAndValidates(t *testing.T) {
	c := kubetest.Client(t, restCfg)
	ctx := context.Background()

	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, types.NamespacedName{Name: "flightfeeds.flightfeed.aero"}, &crd); err != nil {
		t.Fatalf("CRD not installed: %v", err)
	}
	if !crdEstablished(&crd) {
		t.Fatalf("CRD not established: %+v", crd.Status.Conditions)
	}

	var ff unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(specManifest), &ff.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &ff); err != nil {
		t.Fatalf("the example manifest was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), &ff) })
	var got v1alpha1.FlightFeed
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "pek"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Mailbox.DSNSecretRef.Name != "pek-mailbox" || got.Spec.Mailbox.PollInterval.Duration.String() != "100ms" {
		t.Fatalf("read back: %+v", got.Spec.Mailbox)
	}

	bad := []struct {
		name, from, to string
		wantField      string
	}{
		{"lower-case IATA", "iata: PEK", "iata: pek", "spec.airport.iata"},
		{"batch size zero", "batchSize: 200", "batchSize: 0", "spec.mailbox.batchSize"},
		{"batch size too large", "batchSize: 200", "batchSize: 10001", "spec.mailbox.batchSize"},
		{"bad duration", "pollInterval: 100ms", "pollInterval: soon", "spec.mailbox.pollInterval"},
		{"no brokers", `brokers: ["127.0.0.1:9092"]`, "brokers: []", "spec.kafka.brokers"},
		{"broker without port", `brokers: ["127.0.0.1:9092"]`, `brokers: ["kafka"]`, "spec.kafka.brokers[0]"},
		{"injected table name", "batchSize: 200", `batchSize: 200, inbound: {table: "X; DROP TABLE Y"}`, "spec.mailbox.inbound.table"},
		{"reversed horizon", "from: 0, to: 1", "from: 2, to: 1", "requests.horizon.from"},
		{"inline DSN", "dsnSecretRef: {name: pek-db, key: dsn}", `dsn: "postgres://u:p@h/db"`, "spec.database.dsnSecretRef"},
		{"missing airport", "  airport: {iata: PEK, timeZone: Asia/Shanghai}\n", "", "spec.airport"},
		{"poll interval above a minute", "pollInterval: 100ms", "pollInterval: 2m", "spec.mailbox.pollInterval"},
		{"zero request timeout", "timeout: 5m", "timeout: 0s", "spec.requests.timeout"},
		{"same topic twice", "notice: KAFKA_MSG", "notice: KAFKA_SCHD", "spec.kafka.topics.notice"},
		{"notice topic named like the default state topic", "topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}", "topics: {notice: KAFKA_SCHD}", "spec.kafka.topics.notice"},
		{"backoff max below initial", "routingId: AODB}", "routingId: AODB}\n  pump: {backoffInitial: 2m}", "spec.pump.backoffMax"},
		{"reference-data interval below a minute", "routingId: AODB}", "routingId: AODB, referenceData: {types: [GLST], interval: 30s}}", "spec.requests.referenceData.interval"},
		{"reference-data type with markup", "routingId: AODB}", `routingId: AODB, referenceData: {types: ["GLST<"]}}`, "spec.requests.referenceData.types[0]"},
		{"secret key with a slash", "{name: pek-db, key: dsn}", "{name: pek-db, key: a/b}", "spec.database.dsnSecretRef.key"},
		{"secret name with capitals", "{name: pek-db, key: dsn}", "{name: PEK_DB, key: dsn}", "spec.database.dsnSecretRef.name"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			doc := strings.Replace(strings.Replace(specManifest, b.from, b.to, 1), "name: pek,", "name: bad,", 1)
			if doc == specManifest {
				t.Fatal("test case did not change the manifest")
			}
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatal(err)
			}
			err := c.Create(ctx, &obj)
			if err == nil {
				_ = c.Delete(ctx, &obj)
				t.Fatal("accepted, want the API server to refuse it")
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), b.wantField) {
				t.Fatalf("refusal does not name %s: %v", b.wantField, err)
			}
		})
	}
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestFlightFeedDayCRD: the day mirror installs, names a bad day and keeps
// its identity immutable.
func TestFlightFeedDayCRD(t *testing.T) {
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	day := &v1alpha1.FlightFeedDay{}
	day.Namespace, day.Name = "default", "pek-2026-09-09"
	day.Spec = v1alpha1.FlightFeedDaySpec{FeedName: "pek", Day: "2026-09-09"}
	if err := c.Create(ctx, day); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), day) })
	day.Status = v1alpha1.FlightFeedDayStatus{Version: 3, Flights: 2, LastMessageID: 9}
	if err := c.Status().Update(ctx, day); err != nil {
		t.Fatalf("status update: %v", err)
	}
	day.Spec.Day = "2026-09-10"
	err := c.Update(ctx, day)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("changing the day: %v", err)
	}
	bad := &v1alpha1.FlightFeedDay{}
	bad.Namespace, bad.Name = "default", "pek-bad"
	bad.Spec = v1alpha1.FlightFeedDaySpec{FeedName: "pek", Day: "9/9/2026"}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.day") {
		t.Fatalf("bad day: %v", err)
	}
}

// TestManifestsAreAccepted renders config/default and config/samples with
// kustomize (kubectl's) and has the API server validate every object in a
// server-side dry run: the Deployment, RBAC and the sample FlightFeed with
// its Secrets are what a cluster would accept.
func TestManifestsAreAccepted(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			t.Fatal("kubectl not found (it renders the kustomize trees): install it or link it into $KUBEBUILDER_ASSETS")
		}
	}
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, dir := range []string{"config/default", "config/samples"} {
		out, err := exec.CommandContext(ctx, kubectl, "kustomize", filepath.Join(kubetest.RepoRoot(t), dir)).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		kinds := map[string]int{}
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var obj unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			kinds[obj.GetKind()]++
			switch obj.GetKind() {
			case "CustomResourceDefinition":
				continue // installed from the same files by the control plane
			case "Namespace":
				// Created for real: the dry runs below need it to exist.
				if err := c.Create(ctx, &obj); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatalf("%s: namespace %s: %v", dir, obj.GetName(), err)
				}
				continue
			}
			if err := c.Create(ctx, &obj, client.DryRunAll); err != nil {
				t.Errorf("%s: the API server refuses %s %s: %v", dir, obj.GetKind(), obj.GetName(), err)
			}
			if obj.GetKind() == "FlightFeed" {
				checkSampleBrokers(t, &obj)
			}
		}
		t.Logf("%s: %v", dir, kinds)
		if dir == "config/samples" && kinds["FlightFeed"] < 4 {
			t.Errorf("config/samples: %d FlightFeeds, want at least the four samples (minimal, Kafka TLS+SCRAM, read-only DSN, namespaced)", kinds["FlightFeed"])
		}
	}
	checkSamplesListed(t, filepath.Join(kubetest.RepoRoot(t), "config", "samples"))
}

// checkSampleBrokers fails when a sample FlightFeed names a broker a pump
// pod cannot reach as written: an IP address (127.0.0.1 is the pod itself)
// or a name that is not a Service's DNS name.
func checkSampleBrokers(t *testing.T, ff *unstructured.Unstructured) {
	t.Helper()
	brokers, _, _ := unstructured.NestedStringSlice(ff.Object, "spec", "kafka", "brokers")
	for _, b := range brokers {
		host, _, err := net.SplitHostPort(b)
		if err != nil || net.ParseIP(host) != nil || !strings.Contains(host, ".svc") {
			t.Errorf("sample FlightFeed %s/%s: broker %q is not a Service DNS name (NAME.NAMESPACE.svc[.cluster.local]:PORT)", ff.GetNamespace(), ff.GetName(), b)
		}
	}
}

// checkSamplesListed fails when a file of config/samples is not a resource
// of its kustomization, so that every sample is applied above.
func checkSamplesListed(t *testing.T, dir string) {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(dir, "kustomization.yaml")), &k); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("config/samples/%s is not in config/samples/kustomization.yaml: no test applies it", name)
		}
	}
}
