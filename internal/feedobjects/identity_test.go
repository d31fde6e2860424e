package feedobjects

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

func withDefaults(t *testing.T, d PumpDefaults) PumpDefaults {
	t.Helper()
	d.Image = "registry.example/flightfeed:1.2.3"
	out, err := d.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func nested(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s %s: no %s (%v)", u.GetKind(), u.GetName(), strings.Join(path, "."), err)
	}
	return v
}

// Each pump proves its feed: its certificate names the feed's Service and
// nothing else (no name shared by every pump), and is issued by a CA of
// the feed's namespace (a namespaced Issuer backed by a self-signed CA
// Certificate of that namespace, never a ClusterIssuer), so a certificate
// obtained in one namespace is never one a client of another namespace's
// pump accepts.
func TestPumpCertificateNamesOnlyTheFeedsService(t *testing.T) {
	d := withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{}})
	a := render(testFeed(nil), d)
	b := render(testFeed(func(ff *v1alpha1.FlightFeed) { ff.Namespace, ff.UID = "ground", "uid-2" }), d)
	names := func(o Objects) []string {
		ns, _, _ := unstructured.NestedStringSlice(o.Certificate.Object, "spec", "dnsNames")
		return ns
	}
	if got, want := names(a), []string{"pek-pump.airports.svc", "pek-pump.airports.svc.cluster.local"}; !slices.Equal(got, want) {
		t.Errorf("dnsNames %q, want exactly the Service's %q", got, want)
	}
	for _, n := range names(a) {
		if slices.Contains(names(b), n) {
			t.Errorf("airports/pek's and ground/pek's certificates both name %q", n)
		}
	}
	issuer, _, _ := unstructured.NestedStringMap(a.Certificate.Object, "spec", "issuerRef")
	if issuer["kind"] != "Issuer" || issuer["name"] != "flightfeed-pump-ca" || issuer["group"] != "cert-manager.io" {
		t.Errorf("issuerRef %v, want the namespace's Issuer flightfeed-pump-ca", issuer)
	}
	if len(a.NamespaceCA) != 3 {
		t.Fatalf("namespace CA objects: %d, want the self-signed Issuer, the CA Certificate, the CA Issuer", len(a.NamespaceCA))
	}
	for _, o := range a.NamespaceCA {
		if o.GetNamespace() != "airports" || o.GetKind() == "ClusterIssuer" {
			t.Errorf("%s %s/%s: want a namespaced object of the feed's namespace", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		if m, ok := o.Object["spec"].(map[string]any)["issuerRef"].(map[string]any); ok && m["kind"] != "Issuer" {
			t.Errorf("%s %s is issued by a %v, want the namespace's Issuer", o.GetKind(), o.GetName(), m["kind"])
		}
	}
	self, caCert, caIssuer := a.NamespaceCA[0], a.NamespaceCA[1], a.NamespaceCA[2]
	if self.GetKind() != "Issuer" || self.GetName() != "flightfeed-pump-ca-selfsigned" || nested(t, self, "spec", "selfSigned") == nil {
		t.Errorf("self-signed issuer %s %s %v", self.GetKind(), self.GetName(), self.Object["spec"])
	}
	if caCert.GetKind() != "Certificate" || nested(t, caCert, "spec", "isCA") != true || nested(t, caCert, "spec", "secretName") != "flightfeed-pump-ca" ||
		nested(t, caCert, "spec", "issuerRef", "name") != "flightfeed-pump-ca-selfsigned" || nested(t, caCert, "spec", "privateKey", "rotationPolicy") != "Never" {
		t.Errorf("CA certificate %v", caCert.Object["spec"])
	}
	if caIssuer.GetKind() != "Issuer" || caIssuer.GetName() != "flightfeed-pump-ca" || nested(t, caIssuer, "spec", "ca", "secretName") != "flightfeed-pump-ca" {
		t.Errorf("CA issuer %s %s %v", caIssuer.GetKind(), caIssuer.GetName(), caIssuer.Object["spec"])
	}

	// An issuer of the user's: its Certificate names the Service only too,
	// and no namespace CA is made.
	own := render(testFeed(nil), withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{IssuerRef: IssuerRef{Name: "corp-ca"}}}))
	if own.NamespaceCA != nil || !slices.Equal(names(own), names(a)) {
		t.Errorf("own issuer: namespace CA %v, names %q", own.NamespaceCA != nil, names(own))
	}
}

// The scraper verifies each pump by its own Service name: the feed's
// ServiceMonitor lives in the feed's namespace, selects that namespace
// only and the feed's Service (labels, then its name before any scrape),
// verifies the certificate as <feed>-pump.<ns>.svc against a CA Secret of
// the namespace and sends a token from key <feed> of the namespace's
// token Secret. Without a certificate a client can verify, or without a
// way to make the feed's token, there is none: a token never goes to an
// endpoint that cannot prove the feed's name (no insecureSkipVerify).
func TestServiceMonitorVerifiesTheFeedsServiceName(t *testing.T) {
	monitor := &PumpServiceMonitor{Labels: map[string]string{"release": "prometheus"}}
	d := withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{}, ServiceMonitor: monitor})
	o := Render(testFeed(nil), d, Env{ScrapeTokens: true})
	sm := o.ServiceMonitor
	if sm == nil || !o.ScrapeToken {
		t.Fatalf("no ServiceMonitor (%v) or no token kept (%v)", sm != nil, o.ScrapeToken)
	}
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != "airports" || sm.GetName() != "pek-pump" ||
		sm.GetLabels()["release"] != "prometheus" || len(sm.GetOwnerReferences()) != 1 || sm.GetOwnerReferences()[0].UID != "uid-1" {
		t.Errorf("ServiceMonitor %s %s/%s labels %v owners %+v", sm.GetAPIVersion(), sm.GetNamespace(), sm.GetName(), sm.GetLabels(), sm.GetOwnerReferences())
	}
	if ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(ns, []string{"airports"}) {
		t.Errorf("namespaceSelector.matchNames %q, want the feed's namespace only", ns)
	}
	if _, anyNS, _ := unstructured.NestedBool(sm.Object, "spec", "namespaceSelector", "any"); anyNS {
		t.Error("namespaceSelector.any")
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range o.Service.Labels {
		if sel[k] != v {
			t.Errorf("selector %v does not select the feed's Service (label %s=%s)", sel, k, v)
		}
	}
	if sel["flightfeed.aero/feed"] != "pek" {
		t.Errorf("selector %v: not the feed's", sel)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("endpoints %v", eps)
	}
	ep := &unstructured.Unstructured{Object: eps[0].(map[string]any)}
	if nested(t, ep, "scheme") != "https" || nested(t, ep, "port") != "metrics" ||
		nested(t, ep, "tlsConfig", "serverName") != "pek-pump.airports.svc" ||
		nested(t, ep, "tlsConfig", "ca", "secret", "name") != "flightfeed-pump-ca" || nested(t, ep, "tlsConfig", "ca", "secret", "key") != "ca.crt" ||
		nested(t, ep, "authorization", "type") != "Bearer" ||
		nested(t, ep, "authorization", "credentials", "name") != "flightfeed-pump-scrape-tokens" ||
		nested(t, ep, "authorization", "credentials", "key") != "pek" {
		t.Errorf("endpoint %v", ep.Object)
	}
	if skip, _, _ := unstructured.NestedBool(ep.Object, "tlsConfig", "insecureSkipVerify"); skip {
		t.Error("insecureSkipVerify with a token")
	}
	relabel := fmt.Sprint(nested(t, ep, "relabelings"))
	if !strings.Contains(relabel, "keep") || !strings.Contains(relabel, "__meta_kubernetes_service_name") || !strings.Contains(relabel, "regex:pek-pump") {
		t.Errorf("relabelings %s: want the feed's Service kept by name", relabel)
	}

	// An issuer of the user's: the CA cert-manager wrote into the feed's
	// own Secret.
	own := withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{IssuerRef: IssuerRef{Name: "corp-ca"}}, ServiceMonitor: monitor})
	o = Render(testFeed(nil), own, Env{ScrapeTokens: true})
	eps, _, _ = unstructured.NestedSlice(o.ServiceMonitor.Object, "spec", "endpoints")
	if ca, _, _ := unstructured.NestedString(eps[0].(map[string]any), "tlsConfig", "ca", "secret", "name"); ca != "pek-pump-tls" {
		t.Errorf("own issuer: ca from %q, want the feed's Secret pek-pump-tls", ca)
	}

	// Nothing to verify the pods by, or no token of the feed's own: none.
	for name, tc := range map[string]struct {
		d   PumpDefaults
		env Env
	}{
		"no cert-manager":       {withDefaults(t, PumpDefaults{ServiceMonitor: monitor}), Env{ScrapeTokens: true}},
		"no scraper tokens":     {d, Env{}},
		"no metrics":            {withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{}, ServiceMonitor: monitor, Ports: PumpPorts{Metrics: -1}}), Env{ScrapeTokens: true}},
		"no ServiceMonitor set": {withDefaults(t, PumpDefaults{Certificate: &PumpCertificate{}}), Env{ScrapeTokens: true}},
	} {
		if o := Render(testFeed(nil), tc.d, tc.env); o.ServiceMonitor != nil || o.ScrapeToken {
			t.Errorf("%s: a ServiceMonitor (%v) or a token (%v)", name, o.ServiceMonitor != nil, o.ScrapeToken)
		}
	}
	// Plain HTTP metrics (metrics.secure=false): scraped without a token.
	plain := withDefaults(t, PumpDefaults{ServiceMonitor: &PumpServiceMonitor{PlainHTTP: true}})
	o = Render(testFeed(nil), plain, Env{})
	if o.ServiceMonitor == nil || o.ScrapeToken {
		t.Fatalf("plain HTTP: ServiceMonitor %v, token %v", o.ServiceMonitor != nil, o.ScrapeToken)
	}
	eps, _, _ = unstructured.NestedSlice(o.ServiceMonitor.Object, "spec", "endpoints")
	if e := eps[0].(map[string]any); e["scheme"] != "http" || e["authorization"] != nil || e["tlsConfig"] != nil {
		t.Errorf("plain HTTP endpoint %v", e)
	}
}

// The default egress lists only what the feed resolves to: DNS, the API
// server's addresses, and each mailbox, database and broker host:port —
// an address as itself, a host name's port (to the chart's networks for
// it, else anywhere: a NetworkPolicy names no host) — and no blanket rule
// for 443, 3306, 5432 or 9092. Refused, loopback and unspecified
// addresses are never opened; an address outside the chart's networks
// for its dependency is not either, and that is said.
func TestNetworkPolicyEgressIsWhatTheFeedResolvesTo(t *testing.T) {
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstrPort(53))}}}
	d := withDefaults(t, PumpDefaults{NetworkPolicy: &PumpNetworkPolicy{
		Egress:    []networkingv1.NetworkPolicyEgressRule{dns},
		APIServer: &APIServerEgress{Ports: []int32{443, 6443}},
	}})
	ff := testFeed(func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Kafka.Brokers = []string{"10.1.2.3:9093", "kafka.example:9092", "127.0.0.1:9092", "169.254.169.254:80", "0.0.0.0:9092", "kafka.example:9092"}
	})
	env := Env{
		Mailbox:   []string{"192.0.2.10:3306"},
		Database:  []string{"db.example:5433", "[2001:db8::5]:5432", "localhost:5432"},
		APIServer: []netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("172.18.0.2")},
	}
	o := Render(ff, d, env)
	got := egressOf(o.NetworkPolicy)
	want := []string{
		"UDP/53 to any",
		"TCP/443,TCP/6443 to 10.96.0.1/32,172.18.0.2/32",
		"TCP/3306 to 192.0.2.10/32",
		"TCP/5433 to any",
		"TCP/5432 to 2001:db8::5/128",
		"TCP/9093 to 10.1.2.3/32",
		"TCP/9092 to any",
	}
	if !slices.Equal(got, want) {
		t.Errorf("egress\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(o.Adjusted) != 0 {
		t.Errorf("adjusted %q", o.Adjusted)
	}

	// The chart's networks for each dependency: a name's port goes there
	// only; an address outside them is not opened, and that is said.
	d.NetworkPolicy.Brokers.CIDRs = []string{"10.1.0.0/16"}
	d.NetworkPolicy.Database.CIDRs = []string{"10.2.0.0/16"}
	d.NetworkPolicy.APIServer.CIDRs = []string{"172.18.0.2/32"}
	ff.Spec.Kafka.Brokers = []string{"10.1.2.3:9093", "10.9.9.9:9092", "kafka.example:9092"}
	o = Render(ff, d, env)
	got = egressOf(o.NetworkPolicy)
	want = []string{
		"UDP/53 to any",
		"TCP/443,TCP/6443 to 172.18.0.2/32",
		"TCP/3306 to 192.0.2.10/32",
		"TCP/5433 to 10.2.0.0/16",
		"TCP/9093 to 10.1.2.3/32",
		"TCP/9092 to 10.1.0.0/16",
	}
	if !slices.Equal(got, want) {
		t.Errorf("with the chart's networks: egress\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if len(o.Adjusted) != 2 || !strings.Contains(o.Adjusted[0], "[2001:db8::5]:5432") || !strings.Contains(o.Adjusted[1], "spec.kafka.brokers[1] 10.9.9.9:9092") {
		t.Errorf("adjusted %q: want the database address and the broker outside their networks named", o.Adjusted)
	}

	// The API server's addresses unknown: its ports, to any address (the
	// only rule to any address that is not a host name's).
	d.NetworkPolicy.APIServer.CIDRs = nil
	o = Render(ff, d, Env{})
	if got := egressOf(o.NetworkPolicy); got[1] != "TCP/443,TCP/6443 to any" {
		t.Errorf("API server unknown: %q", got)
	}
}

// egressOf is each egress rule as "PROTO/port,... to cidr,..." ("any":
// no peer).
func egressOf(np *networkingv1.NetworkPolicy) []string {
	var out []string
	for _, r := range np.Spec.Egress {
		var ports, to []string
		for _, p := range r.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s", ptr.Deref(p.Protocol, "TCP"), p.Port.String()))
		}
		for _, peer := range r.To {
			to = append(to, peer.IPBlock.CIDR)
		}
		if len(to) == 0 {
			to = []string{"any"}
		}
		out = append(out, strings.Join(ports, ",")+" to "+strings.Join(to, ","))
	}
	return out
}
