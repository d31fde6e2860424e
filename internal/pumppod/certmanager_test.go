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

// The pump pods' certificates: with cert-manager served (or forced), the
// pump defaults name an issuer — the user's, or the chart's own CA
// ClusterIssuer, whose CA certificate lives in cert-manager's namespace —
// and the pumps' ServiceMonitor verifies every pump by the shared name
// against the issuer's CA, carried into the release namespace by a
// certificate of the same issuer. Without cert-manager, opted out, or with
// no TLS endpoint on the pumps: no certificate, and the ServiceMonitor says
// it cannot verify.
func TestChartPumpCertificatesFromCertManager(t *testing.T) {
	find := func(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && o.GetName() == name {
				return o
			}
		}
		return nil
	}
	monitor := []string{"--set", "monitoring.serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1"}
	const ownCA = "ops-ff-flightfeed-pump-ca"
	for _, tc := range []struct {
		name   string
		args   []string
		issuer string // "" : no certificate
		kind   string
		ownCA  bool
	}{
		{"cert-manager installed: on, the chart's CA", []string{"--api-versions", "cert-manager.io/v1"}, ownCA, "ClusterIssuer", true},
		{"cert-manager absent: off", nil, "", "", false},
		{"opted out", []string{"--api-versions", "cert-manager.io/v1", "--set", "pump.certManager.enabled=false"}, "", "", false},
		{"forced on", []string{"--set", "pump.certManager.enabled=true"}, ownCA, "ClusterIssuer", true},
		{"the user's issuer", []string{"--api-versions", "cert-manager.io/v1", "--set", "pump.certManager.issuerRef.name=corp-ca"}, "corp-ca", "ClusterIssuer", false},
		{"no TLS endpoint on the pumps", []string{"--api-versions", "cert-manager.io/v1", "--set", "api.enabled=false", "--set", "metrics.secure=false"}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, "ff", "ops", append(append([]string(nil), monitor...), tc.args...)...)
			d := pumpDefaultsOf(t, objs)
			if tc.issuer == "" {
				if d.Certificate != nil {
					t.Errorf("pump defaults name a certificate issuer %+v", d.Certificate)
				}
				for _, o := range objs {
					if o.GetKind() == "ClusterIssuer" || strings.Contains(o.GetName(), "pump-trust") {
						t.Errorf("%s %s rendered", o.GetKind(), o.GetName())
					}
				}
				if sm := find(objs, "ServiceMonitor", "ff-flightfeed-pumps"); sm != nil {
					endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
					if skip, _, _ := unstructured.NestedBool(endpoints[0].(map[string]any), "tlsConfig", "insecureSkipVerify"); !skip && !strings.Contains(tc.name, "no TLS") {
						t.Error("pumps' ServiceMonitor verifies a self-signed certificate")
					}
				}
				return
			}
			if d.Certificate == nil || d.Certificate.IssuerRef.Name != tc.issuer || d.Certificate.IssuerRef.Kind != tc.kind ||
				d.Certificate.IssuerRef.Group != "cert-manager.io" || d.Certificate.ClusterDomain != "cluster.local" {
				t.Fatalf("pump defaults certificate %+v, want issuer %s %s", d.Certificate, tc.kind, tc.issuer)
			}
			caCert := find(objs, "Certificate", ownCA)
			if (caCert != nil) != tc.ownCA || (find(objs, "ClusterIssuer", ownCA) != nil) != tc.ownCA {
				t.Fatalf("the chart's CA rendered: %v, want %v", caCert != nil, tc.ownCA)
			}
			if caCert != nil {
				isCA, _, _ := unstructured.NestedBool(caCert.Object, "spec", "isCA")
				if caCert.GetNamespace() != "cert-manager" || !isCA {
					t.Errorf("CA certificate in %q, isCA %v: want cert-manager's cluster resource namespace", caCert.GetNamespace(), isCA)
				}
				secret, _, _ := unstructured.NestedString(find(objs, "ClusterIssuer", ownCA).Object, "spec", "ca", "secretName")
				if secret != ownCA {
					t.Errorf("CA ClusterIssuer reads %q", secret)
				}
			}
			trust := find(objs, "Certificate", "ff-flightfeed-pump-trust")
			if trust == nil || trust.GetNamespace() != "ops" {
				t.Fatal("no trust certificate in the release namespace")
			}
			trustIssuer, _, _ := unstructured.NestedString(trust.Object, "spec", "issuerRef", "name")
			if trustIssuer != tc.issuer {
				t.Errorf("trust certificate issued by %q, want the pumps' issuer %q", trustIssuer, tc.issuer)
			}
			sm := find(objs, "ServiceMonitor", "ff-flightfeed-pumps")
			endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			tlsConfig, _, _ := unstructured.NestedMap(endpoints[0].(map[string]any), "tlsConfig")
			skip, _, _ := unstructured.NestedBool(tlsConfig, "insecureSkipVerify")
			caSecret, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
			if skip || caSecret != "ff-flightfeed-pump-trust" || tlsConfig["serverName"] != "flightfeed-pump" {
				t.Errorf("pumps' ServiceMonitor tlsConfig %v: want serverName flightfeed-pump verified against the trust Secret's ca.crt", tlsConfig)
			}
		})
	}
}
