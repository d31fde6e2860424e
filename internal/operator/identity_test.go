package operator_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/scrapertoken"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// installCRD stands in for cert-manager's and the Prometheus Operator's
// CRDs, as installCertificateCRD does: the kind served, any spec kept.
func installCRD(e *env, group, plural, kind string) {
	e.t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := e.c.Create(e.t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	await.Eventually(e.t, "the "+kind+" CRD established", waitLong, func() (bool, string) {
		var got apiextensionsv1.CustomResourceDefinition
		if err := e.get(types.NamespacedName{Name: crd.Name}, &got); err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", got.Status.Conditions)
	})
}

func getUnstructured(e *env, apiVersion, kind string, key types.NamespacedName) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, e.get(key, u)
}

func ownerUIDs(o client.Object) []types.UID {
	var out []types.UID
	for _, r := range o.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}

// Each pump proves its feed, as the operator writes it against a real API
// server: in every namespace holding a FlightFeed, a CA of that namespace
// (a self-signed Issuer, the CA Certificate, the CA Issuer), owned by the
// namespace's feeds; per feed a Certificate for its Service's names only,
// issued by that namespace's Issuer; a ServiceMonitor in the feed's
// namespace that selects that namespace only and verifies the feed's
// Service name against the namespace's CA; and, in the namespace's token
// Secret under the feed's name, a token of the scraper made for that
// feed's audience alone. A feed that goes loses its token; the
// ServiceMonitors go when turned off.
func TestEachPumpProvesItsFeed(t *testing.T) {
	a := newNamespace(t)
	b := &env{t: t, c: a.c, ns: a.ns + "-b"}
	b.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}})
	opNS := a.ns + "-sys"
	a.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNS}})
	a.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: opNS}})
	installCRD(a, "cert-manager.io", "certificates", "Certificate")
	installCRD(a, "cert-manager.io", "issuers", "Issuer")
	installCRD(a, "monitoring.coreos.com", "servicemonitors", "ServiceMonitor")
	withMonitoring := func(o *operator.Options) {
		o.Namespaces = []string{a.ns, b.ns}
		o.Pump.Certificate = &feedobjects.PumpCertificate{}
		o.Pump.ServiceMonitor = &feedobjects.PumpServiceMonitor{Labels: map[string]string{"release": "prometheus"}}
		o.ScraperToken = scrapertoken.Keeper{ServiceAccount: "scraper", TTL: time.Hour}
	}
	stop := a.start(withMonitoring)
	t.Cleanup(stop)
	pek, pvg, bpek := a.feed("pek", nil), a.feed("pvg", nil), b.feed("pek", nil)

	type want struct {
		e  *env
		ff *v1alpha1.FlightFeed
	}
	feeds := []want{{a, pek}, {a, pvg}, {b, bpek}}
	await.Eventually(t, "every feed's certificate, ServiceMonitor and token; every namespace's CA", waitLong, func() (bool, string) {
		var problems []string
		for _, w := range feeds {
			ns, name := w.e.ns, w.ff.Name
			svc := feednames.Pump(name)
			cert, err := getUnstructured(w.e, "cert-manager.io/v1", "Certificate", types.NamespacedName{Namespace: ns, Name: feednames.PumpTLS(name)})
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
			if want := []string{svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}; !slices.Equal(names, want) {
				problems = append(problems, fmt.Sprintf("%s/%s certificate names %q, want exactly %q", ns, name, names, want))
			}
			if issuer["kind"] != "Issuer" || issuer["name"] != feednames.PumpCA {
				problems = append(problems, fmt.Sprintf("%s/%s certificate issuer %v", ns, name, issuer))
			}
			sm, err := getUnstructured(w.e, "monitoring.coreos.com/v1", "ServiceMonitor", types.NamespacedName{Namespace: ns, Name: svc})
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			matchNames, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if !slices.Equal(matchNames, []string{ns}) || len(eps) != 1 || sm.GetLabels()["release"] != "prometheus" {
				problems = append(problems, fmt.Sprintf("%s/%s ServiceMonitor %v", ns, name, sm.Object["spec"]))
				continue
			}
			ep := eps[0].(map[string]any)
			server, _, _ := unstructured.NestedString(ep, "tlsConfig", "serverName")
			caSecret, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name")
			skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
			tokenKey, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
			tokenSecret, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
			if server != svc+"."+ns+".svc" || caSecret != feednames.PumpCA || skip || tokenKey != name || tokenSecret != feednames.PumpScrapeTokens {
				problems = append(problems, fmt.Sprintf("%s/%s ServiceMonitor endpoint %v", ns, name, ep))
			}
			var tokens corev1.Secret
			if err := w.e.get(types.NamespacedName{Namespace: ns, Name: feednames.PumpScrapeTokens}, &tokens); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			aud, err := scrapertoken.TokenAudiences(string(tokens.Data[name]))
			if want := []string{"flightfeed.aero/" + ns + "/" + name}; err != nil || !slices.Equal(aud, want) {
				problems = append(problems, fmt.Sprintf("%s/%s token audiences %q (%v), want %q alone", ns, name, aud, err, want))
			}
			if !slices.Contains(ownerUIDs(&tokens), w.ff.UID) {
				problems = append(problems, fmt.Sprintf("token Secret of %s not owned by %s", ns, name))
			}
			for _, k := range []struct{ kind, name string }{{"Issuer", feednames.PumpCASelfSigned}, {"Issuer", feednames.PumpCA}, {"Certificate", feednames.PumpCA}} {
				o, err := getUnstructured(w.e, "cert-manager.io/v1", k.kind, types.NamespacedName{Namespace: ns, Name: k.name})
				if err != nil {
					problems = append(problems, err.Error())
					continue
				}
				if !slices.Contains(ownerUIDs(o), w.ff.UID) {
					problems = append(problems, fmt.Sprintf("%s %s/%s not owned by %s", k.kind, ns, k.name, name))
				}
			}
		}
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	ca, err := getUnstructured(a, "cert-manager.io/v1", "Certificate", types.NamespacedName{Namespace: a.ns, Name: feednames.PumpCA})
	if err != nil {
		t.Fatal(err)
	}
	if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
		t.Errorf("the namespace's CA Certificate: %v", ca.Object["spec"])
	}
	if issuer, _, _ := unstructured.NestedStringMap(ca.Object, "spec", "issuerRef"); issuer["kind"] != "Issuer" || issuer["name"] != feednames.PumpCASelfSigned {
		t.Errorf("the namespace's CA is issued by %v, want the namespace's self-signed Issuer", issuer)
	}

	// pvg goes: its token goes from the namespace's Secret at the next
	// reconcile of the namespace (pek's, woken here by a label).
	if err := a.c.Delete(t.Context(), pvg); err != nil {
		t.Fatal(err)
	}
	touch(t, a, pek)
	await.Eventually(t, "pvg's token dropped", waitLong, func() (bool, string) {
		var tokens corev1.Secret
		if err := a.get(types.NamespacedName{Namespace: a.ns, Name: feednames.PumpScrapeTokens}, &tokens); err != nil {
			return false, err.Error()
		}
		_, has := tokens.Data["pvg"]
		return !has && len(tokens.Data["pek"]) > 0, fmt.Sprintf("keys %v", slices.Collect(mapKeys(tokens.Data)))
	})

	// The ServiceMonitors turned off: they go, and so do the tokens.
	stop()
	t.Cleanup(a.start(func(o *operator.Options) {
		withMonitoring(o)
		o.Pump.ServiceMonitor = nil
	}))
	touch(t, a, pek)
	await.Eventually(t, "no ServiceMonitor, no token", waitLong, func() (bool, string) {
		_, err := getUnstructured(a, "monitoring.coreos.com/v1", "ServiceMonitor", types.NamespacedName{Namespace: a.ns, Name: feednames.Pump("pek")})
		var tokens corev1.Secret
		terr := a.get(types.NamespacedName{Namespace: a.ns, Name: feednames.PumpScrapeTokens}, &tokens)
		return apierrors.IsNotFound(err) && terr == nil && len(tokens.Data) == 0, fmt.Sprintf("ServiceMonitor: %v; tokens: %v %d", err, terr, len(tokens.Data))
	})
}

// touch labels ff so the operator reconciles it again.
func touch(t *testing.T, e *env, ff *v1alpha1.FlightFeed) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.FlightFeed
		if err := e.get(client.ObjectKeyFromObject(ff), &cur); err != nil {
			return err
		}
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels["touched"] = fmt.Sprint(time.Now().UnixNano())
		return e.c.Update(t.Context(), &cur)
	}); err != nil {
		t.Fatal(err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The pump pods' egress lists what the feed resolves to, as the operator
// writes it against a real API server: the API server's own addresses
// (looked up: the kubernetes Service and its EndpointSlice), the mailbox
// host:port from a DSN Secret the feed may use, each broker; a DSN
// Secret that does not name the feed opens nothing until it does; no
// blanket rule for 3306, 5432 or 9092.
func TestNetworkPolicyListsWhatTheFeedResolvesTo(t *testing.T) {
	e := newEnv(t, func(o *operator.Options) {
		o.Pump.NetworkPolicy = &feedobjects.PumpNetworkPolicy{
			Egress:    []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}}}},
			APIServer: &feedobjects.APIServerEgress{Ports: []int32{443, 6443}},
		}
	})
	secret := func(name, dsn string, feeds string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{v1alpha1.SecretLabel: "true"}},
			StringData: map[string]string{"dsn": dsn}}
		if feeds != "" {
			s.Annotations = map[string]string{v1alpha1.FeedsAnnotation: feeds}
		}
		return s
	}
	e.create(secret("pek-mailbox", "ff:secret@tcp(192.0.2.10:3307)/sis?tls=true", "pek"))
	// Not for pek (yet): the operator opens nothing for it.
	e.create(secret("pek-db", "postgres://ff:secret@192.0.2.20:5433/flightfeed?sslmode=verify-full", "pvg"))
	ff := e.feed("pek", func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Kafka.Brokers = []string{"192.0.2.30:9093", "kafka.example:9092"}
	})
	pk := types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}

	var np networkingv1.NetworkPolicy
	rules := func() []string {
		var out []string
		for _, r := range np.Spec.Egress {
			var ports, to []string
			for _, p := range r.Ports {
				ports = append(ports, fmt.Sprintf("%s/%s", ptr.Deref(p.Protocol, corev1.ProtocolTCP), p.Port.String()))
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
	await.Eventually(t, "the feed's egress", waitLong, func() (bool, string) {
		if err := e.get(pk, &np); err != nil {
			return false, err.Error()
		}
		got := rules()
		return len(got) == 5 && slices.Contains(got, "TCP/3307 to 192.0.2.10/32") && slices.Contains(got, "TCP/9093 to 192.0.2.30/32") &&
			slices.Contains(got, "TCP/9092 to any"), strings.Join(got, "; ")
	})
	got := rules()
	if got[0] != "UDP/53 to any" || !strings.HasPrefix(got[1], "TCP/443,TCP/6443 to ") || strings.HasSuffix(got[1], " to any") {
		t.Errorf("egress %q: want DNS, then the API server's addresses", got)
	}
	for _, r := range got {
		for _, p := range []string{"TCP/3306 ", "TCP/5432 ", "TCP/5433 "} {
			if strings.HasPrefix(r, p) {
				t.Errorf("egress %q: %s opened", got, p)
			}
		}
	}
	// The Secret's owner names pek: its database is opened at the next
	// reconcile (at the latest DependencyResync later; here a label wakes
	// it).
	var db corev1.Secret
	if err := e.get(types.NamespacedName{Namespace: e.ns, Name: "pek-db"}, &db); err != nil {
		t.Fatal(err)
	}
	db.Annotations[v1alpha1.FeedsAnnotation] = "pek,pvg"
	if err := e.c.Update(t.Context(), &db); err != nil {
		t.Fatal(err)
	}
	touch(t, e, ff)
	await.Eventually(t, "the database's host:port opened", waitLong, func() (bool, string) {
		if err := e.get(pk, &np); err != nil {
			return false, err.Error()
		}
		return slices.Contains(rules(), "TCP/5433 to 192.0.2.20/32"), strings.Join(rules(), "; ")
	})
}
