package pumppod_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The chart issues the operator's metrics certificate with cert-manager
// when the API server serves cert-manager.io/v1 (or when asked), mounts
// its Secret and has the ServiceMonitor verify it; without cert-manager,
// or opted out, it keeps the self-signed certificate and says so by
// skipping verification.
func TestChartMetricsCertificateFromCertManager(t *testing.T) {
	find := func(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && (name == "" || o.GetName() == name) {
				return o
			}
		}
		return nil
	}
	monitor := []string{"--set", "monitoring.serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1"}
	for _, tc := range []struct {
		name     string
		args     []string
		issued   bool
		selfCA   bool
		issuerOf string
	}{
		{"cert-manager installed: on by default", []string{"--api-versions", "cert-manager.io/v1"}, true, true, "ff-flightfeed-ca"},
		{"cert-manager absent: off by default", nil, false, false, ""},
		{"opted out", []string{"--api-versions", "cert-manager.io/v1", "--set", "metrics.certManager.enabled=false"}, false, false, ""},
		{"forced on", []string{"--set", "metrics.certManager.enabled=true"}, true, true, "ff-flightfeed-ca"},
		{"an issuer of the user's", []string{"--api-versions", "cert-manager.io/v1", "--set", "metrics.certManager.issuerRef.name=corp-ca",
			"--set", "metrics.certManager.issuerRef.kind=ClusterIssuer"}, true, false, "corp-ca"},
		{"a certSecret of the user's wins", []string{"--api-versions", "cert-manager.io/v1", "--set", "metrics.certSecret=mine"}, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, "ff", "ops", append(append([]string(nil), monitor...), tc.args...)...)
			cert := find(objs, "Certificate", "ff-flightfeed-metrics")
			if (cert != nil) != tc.issued {
				t.Fatalf("metrics Certificate rendered: %v, want %v", cert != nil, tc.issued)
			}
			if (find(objs, "Issuer", "ff-flightfeed-ca") != nil) != tc.selfCA {
				t.Errorf("the chart's own CA rendered: %v, want %v", !tc.selfCA, tc.selfCA)
			}
			dep := find(objs, "Deployment", "ff-flightfeed")
			sm := find(objs, "ServiceMonitor", "")
			if dep == nil || sm == nil {
				t.Fatal("no Deployment or ServiceMonitor")
			}
			var args []string
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			if len(containers) > 0 {
				args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			}
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			tlsConfig, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
			skip, _, _ := unstructured.NestedBool(tlsConfig, "insecureSkipVerify")
			caSecret, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
			mounted := strings.Contains(strings.Join(args, " "), "--metrics-cert-dir=")
			if !tc.issued {
				own := strings.Contains(tc.name, "certSecret")
				if own && (caSecret != "mine" || skip || !mounted) || !own && (!skip || mounted) {
					t.Errorf("operator args %v; ServiceMonitor tlsConfig %v", args, tlsConfig)
				}
				return
			}
			secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
			dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			if secret != "ff-flightfeed-metrics-cert" || issuer != tc.issuerOf || len(dns) == 0 || dns[0] != "ff-flightfeed.ops.svc" {
				t.Errorf("Certificate secret %q issuer %q names %v", secret, issuer, dns)
			}
			if !mounted || skip || caSecret != secret {
				t.Errorf("operator args %v; ServiceMonitor tlsConfig %v: want the Secret mounted and verified against its ca.crt", args, tlsConfig)
			}
		})
	}
}
