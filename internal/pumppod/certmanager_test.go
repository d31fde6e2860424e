package pumppod_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
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
// pump defaults turn them on — issued by each feed namespace's own CA,
// which the operator keeps, or by the user's issuer — and the chart
// renders no ClusterIssuer that would sign any namespace's pump name for
// whoever may request a certificate. No ServiceMonitor of the chart's
// selects the pumps' Services (any namespace, labels anyone can set): the
// operator writes one per feed in the feed's namespace, with a token it
// keeps there (the writer ClusterRole: create Secrets, get and update that
// one). Without cert-manager, opted out, or with no TLS endpoint on the
// pumps: no certificate.
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
	const writer = "ff-flightfeed-scrape-token-writer"
	for _, tc := range []struct {
		name   string
		args   []string
		issuer string // "-": no certificate; "": the namespace's own CA
	}{
		{"cert-manager installed: on, each namespace's own CA", []string{"--api-versions", "cert-manager.io/v1"}, ""},
		{"cert-manager absent: off", nil, "-"},
		{"opted out", []string{"--api-versions", "cert-manager.io/v1", "--set", "pump.certManager.enabled=false"}, "-"},
		{"forced on", []string{"--set", "pump.certManager.enabled=true"}, ""},
		{"the user's issuer", []string{"--api-versions", "cert-manager.io/v1", "--set", "pump.certManager.issuerRef.name=corp-ca"}, "corp-ca"},
		{"no TLS endpoint on the pumps", []string{"--api-versions", "cert-manager.io/v1", "--set", "api.enabled=false", "--set", "metrics.secure=false"}, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, "ff", "ops", append(append([]string(nil), monitor...), tc.args...)...)
			d := pumpDefaultsOf(t, objs)
			for _, o := range objs {
				if o.GetKind() == "ClusterIssuer" || strings.Contains(o.GetName(), "pump-trust") || strings.Contains(o.GetName(), "pump-ca") {
					t.Errorf("%s %s rendered: a CA of the chart's would sign every namespace's pump names", o.GetKind(), o.GetName())
				}
				if o.GetKind() != "ServiceMonitor" {
					continue
				}
				if anyNS, _, _ := unstructured.NestedBool(o.Object, "spec", "namespaceSelector", "any"); anyNS || o.GetName() != "ff-flightfeed" {
					t.Errorf("ServiceMonitor %s (namespaceSelector.any %v): the chart's only ServiceMonitor is the operator's", o.GetName(), anyNS)
				}
			}
			// The operator writes each feed's ServiceMonitor; it decides
			// whether it can be scraped safely (controllers' tests).
			if d.ServiceMonitor == nil || d.ServiceMonitor.PlainHTTP != strings.Contains(tc.name, "no TLS") {
				t.Errorf("pump defaults serviceMonitor %+v", d.ServiceMonitor)
			}
			args := strings.Join(argsOf(t, objs), " ")
			if tc.issuer == "-" {
				if d.Certificate != nil {
					t.Errorf("pump defaults name a certificate %+v", d.Certificate)
				}
				if strings.Contains(args, "--scrape-token-writer-clusterrole") || find(objs, "ClusterRole", writer) != nil {
					t.Errorf("no certificate, yet the token writer: args %s", args)
				}
				return
			}
			if d.Certificate == nil || d.Certificate.IssuerRef.Name != tc.issuer || d.Certificate.ClusterDomain != "cluster.local" {
				t.Fatalf("pump defaults certificate %+v, want issuer %q", d.Certificate, tc.issuer)
			}
			if tc.issuer != "" && (d.Certificate.IssuerRef.Kind != "ClusterIssuer" || d.Certificate.IssuerRef.Group != "cert-manager.io") {
				t.Errorf("the user's issuer %+v", d.Certificate.IssuerRef)
			}
			if !strings.Contains(args, "--scrape-token-writer-clusterrole="+writer) {
				t.Errorf("operator args %s lack the token writer", args)
			}
			w := find(objs, "ClusterRole", writer)
			if w == nil {
				t.Fatal("no token writer ClusterRole")
			}
			var r rbacv1.ClusterRole
			convert(t, w, &r)
			if got, want := sortedSet(flatten(t, r.Rules)), []string{" secrets create", " secrets get [flightfeed-pump-scrape-tokens]", " secrets update [flightfeed-pump-scrape-tokens]"}; !slices.Equal(got, want) {
				t.Errorf("the token writer grants %v, want %v", got, want)
			}
			grants := grants(t, objs, "ops", "ff-flightfeed")
			if !slices.Contains(grants["cluster"], "rbac.authorization.k8s.io clusterroles bind ["+writer+"]") {
				t.Errorf("the operator may not bind the token writer: %v", grants["cluster"])
			}
			for _, g := range grants["cluster"] {
				if strings.Contains(g, " secrets ") {
					t.Errorf("the chart binds the operator to %q itself", g)
				}
			}
		})
	}
}
