package pumppod_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// Every field of both CRDs, as the API server serves them, says what it
// is: `kubectl explain` shows no empty description anywhere.
func TestCRDsDescribeEveryField(t *testing.T) {
	c := kubetest.Client(t, restCfg)
	for _, name := range []string{"flightfeeds.flightfeed.aero", "flightfeeddays.flightfeed.aero"} {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(t.Context(), types.NamespacedName{Name: name}, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			var missing []string
			undescribed(v.Schema.OpenAPIV3Schema, "", &missing)
			if len(missing) > 0 {
				t.Errorf("%s %s: fields without a description: %s", name, v.Name, strings.Join(missing, ", "))
			}
		}
	}

	// kubectl reads the same schema from the server's OpenAPI.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed (apt-get install -y kubectl): %v", err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig,
		"explain", "flightfeed.spec.mailbox.inbound.noteColumn").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl explain: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reason code") {
		t.Errorf("kubectl explain flightfeed.spec.mailbox.inbound.noteColumn printed no description:\n%s", out)
	}
}

// undescribed appends the path of every property without a description.
// The object's metadata is Kubernetes' own, and the items of a list of
// scalars are described by the list.
func undescribed(s *apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		child := path + "." + name
		if child == ".metadata" {
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			*missing = append(*missing, child)
		}
		undescribed(&p, child, missing)
	}
	if s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type == "object" {
		undescribed(s.Items.Schema, path+"[]", missing)
	}
}

// The defaults the code applies (config.SetDefaults) are the CRD's OpenAPI
// defaults: a minimal FlightFeed as the API server stores it already holds
// every one of them, so the code's defaulting changes nothing, and a user
// sees in `kubectl get -o yaml` what the pump runs with.
func TestCRDDefaultsAreTheCodes(t *testing.T) {
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	const minimal = `
apiVersion: flightfeed.aero/v1alpha1
kind: FlightFeed
metadata: {name: minimal, namespace: default}
spec:
  airport: {iata: PEK}
  mailbox: {dsnSecretRef: {name: pek-mailbox, key: dsn}}
  database: {dsnSecretRef: {name: pek-db, key: dsn}}
  kafka: {brokers: ["127.0.0.1:9092"]}
`
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(minimal), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, &u) })
	var stored v1alpha1.FlightFeed
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "minimal"}, &stored); err != nil {
		t.Fatal(err)
	}
	defaulted := *stored.Spec.DeepCopy()
	config.SetDefaults(&defaulted)
	if d := cmp.Diff(defaulted, stored.Spec); d != "" {
		t.Errorf("defaults the code applies but the CRD does not (-code +stored):\n%s", d)
	}
	// The server did default: a spec defaulted by the code alone equals it.
	var bare v1alpha1.FlightFeed
	if err := yaml.Unmarshal([]byte(minimal), &bare); err != nil {
		t.Fatal(err)
	}
	config.SetDefaults(&bare.Spec)
	if d := cmp.Diff(bare.Spec, stored.Spec); d != "" {
		t.Errorf("the CRD's defaults differ from the code's (-code +stored):\n%s", d)
	}
}
