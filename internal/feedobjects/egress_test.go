package feedobjects

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// A DSN Secret opens egress for a feed only when it consents to that feed
// as the pump requires: the label and the feed named in the annotation.
func TestConsentedDSN(t *testing.T) {
	secret := func(labels, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pek-db", Labels: labels, Annotations: annotations},
			Data: map[string][]byte{"dsn": []byte("postgres://db.example:5433/ff")}}
	}
	label := map[string]string{v1alpha1.SecretLabel: "true"}
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		key  string
		want string
	}{
		{"labelled, the feed named", secret(label, map[string]string{v1alpha1.FeedsAnnotation: "pvg, pek"}), "dsn", "postgres://db.example:5433/ff"},
		{"labelled, every feed of the namespace", secret(label, map[string]string{v1alpha1.FeedsAnnotation: "*"}), "dsn", "postgres://db.example:5433/ff"},
		{"labelled, another key", secret(label, map[string]string{v1alpha1.FeedsAnnotation: "pek"}), "other", ""},
		{"labelled, another feed named", secret(label, map[string]string{v1alpha1.FeedsAnnotation: "pvg"}), "dsn", ""},
		{"labelled, no annotation", secret(label, nil), "dsn", ""},
		{"labelled, an invalid annotation", secret(label, map[string]string{v1alpha1.FeedsAnnotation: " "}), "dsn", ""},
		{"the feed named, no label", secret(nil, map[string]string{v1alpha1.FeedsAnnotation: "pek"}), "dsn", ""},
		{"the feed named, label false", secret(map[string]string{v1alpha1.SecretLabel: "false"}, map[string]string{v1alpha1.FeedsAnnotation: "pek"}), "dsn", ""},
	} {
		if got := ConsentedDSN(tc.s, "pek", tc.key); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The mailbox's and the databases' host:port come from the DSNs the feed
// names (the writer's and the reader's, each address once); a DSN that
// opens nothing adds nothing, and a Secret that cannot be read stops the
// lot with its own error.
func TestDependencyAddresses(t *testing.T) {
	dsns := map[string]string{
		"pek-mailbox": "ff:secret@tcp(mailbox.example:3307)/cmin",
		"pek-db":      "postgres://ff@db1.example:5433,db2.example:5434/ff",
		"pek-read":    "postgres://reader@db2.example:5434/ff",
	}
	read := func(ref v1alpha1.SecretKeyRef) (string, error) { return dsns[ref.Name], nil }
	ff := testFeed(func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "pek-read", Key: "dsn"}
	})
	mailbox, database, err := DependencyAddresses(ff, read)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mailbox, []string{"mailbox.example:3307"}) || !slices.Equal(database, []string{"db1.example:5433", "db2.example:5434"}) {
		t.Errorf("mailbox %q database %q", mailbox, database)
	}

	// Nothing consented (""), or a Unix socket: nothing to open.
	for _, dsn := range []map[string]string{
		{"pek-mailbox": "", "pek-db": "", "pek-read": ""},
		{"pek-mailbox": "ff@unix(/run/mysqld/mysqld.sock)/cmin", "pek-db": "host=/var/run/postgresql dbname=ff", "pek-read": "host=/tmp dbname=ff"},
	} {
		t.Setenv("PGHOST", "db.from.environment") // the driver's default for ""
		mailbox, database, err = DependencyAddresses(ff, func(ref v1alpha1.SecretKeyRef) (string, error) { return dsn[ref.Name], nil })
		if err != nil || mailbox != nil || database != nil {
			t.Errorf("%q: nothing to open, yet mailbox %q database %q err %v", dsn, mailbox, database, err)
		}
	}

	unreadable := errors.New("the API server is away")
	_, _, err = DependencyAddresses(ff, func(ref v1alpha1.SecretKeyRef) (string, error) {
		if ref.Name == "pek-read" {
			return "", unreadable
		}
		return dsns[ref.Name], nil
	})
	if !errors.Is(err, unreadable) {
		t.Errorf("err %v, want the read's own", err)
	}
}

// The API server as a pod reaches it: the Service's addresses and the
// endpoints behind it, each once, sorted; without an endpoint, unknown.
func TestAPIServerAddresses(t *testing.T) {
	slice := func(addrs ...string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: addrs}}}
	}
	for _, tc := range []struct {
		name    string
		svc     corev1.ServiceSpec
		slice   *discoveryv1.EndpointSlice
		want    []string
		unknown bool
	}{
		{"cluster IPs and endpoints, sorted and each once", corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1", "fd00::1"}},
			slice("172.18.0.3", "::ffff:172.18.0.2", "10.96.0.1", "not an address"), []string{"10.96.0.1", "172.18.0.2", "172.18.0.3", "fd00::1"}, false},
		{"no ClusterIPs: the ClusterIP", corev1.ServiceSpec{ClusterIP: "10.96.0.1"}, slice("172.18.0.2"), []string{"10.96.0.1", "172.18.0.2"}, false},
		{"no endpoint", corev1.ServiceSpec{ClusterIP: "10.96.0.1"}, &discoveryv1.EndpointSlice{}, nil, true},
	} {
		got, err := APIServerAddresses(&corev1.Service{Spec: tc.svc}, tc.slice)
		if tc.unknown {
			if err == nil || err.Error() != "endpointslice default/kubernetes lists no address" || got != nil {
				t.Errorf("%s: %v, %v; want unknown", tc.name, got, err)
			}
			continue
		}
		var want []netip.Addr
		for _, w := range tc.want {
			want = append(want, netip.MustParseAddr(w))
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, want)
		}
	}
}
