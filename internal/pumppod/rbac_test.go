package pumppod_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

// What the operator's code calls, per scope: "group resource verb
// [resourceNames]". Every rule of the chart's operator roles must be here
// and every entry must be granted; TestOperatorAndPumpRunUnderTheChartsRBAC
// proves the set enough.
var (
	// feedScope: in every namespace whose FlightFeeds the operator runs
	// (config/rbac/role.yaml, from the markers in controllers/). The pump
	// objects it makes; the feed's Lease (made empty, then never touched);
	// status.pumpPods; and what the pump's Role grants, which RBAC lets
	// only a holder grant. No Secret: see secretGrant.
	feedScope = join(
		crud("apps deployments"), crud(" services"), crud(" serviceaccounts"), crud("policy poddisruptionbudgets"),
		crud("networking.k8s.io networkpolicies"), crud("rbac.authorization.k8s.io roles"),
		crud("rbac.authorization.k8s.io rolebindings"),
		[]string{
			"flightfeed.aero flightfeeds get", "flightfeed.aero flightfeeds list", "flightfeed.aero flightfeeds watch",
			"flightfeed.aero flightfeeds patch", "flightfeed.aero flightfeeds update", // the previous release's finalizer
			"flightfeed.aero flightfeeds/status get", "flightfeed.aero flightfeeds/status patch", "flightfeed.aero flightfeeds/status update",
			"flightfeed.aero flightfeeds/finalizers update",
			"flightfeed.aero flightfeeddays get", "flightfeed.aero flightfeeddays list", "flightfeed.aero flightfeeddays watch",
			"flightfeed.aero flightfeeddays create", "flightfeed.aero flightfeeddays delete",
			"flightfeed.aero flightfeeddays/status get", "flightfeed.aero flightfeeddays/status patch",
			"coordination.k8s.io leases get", "coordination.k8s.io leases create", "coordination.k8s.io leases update",
			"coordination.k8s.io leases watch", // only to grant it to the pumps (a standby watches its Lease)
			"events.k8s.io events create", "events.k8s.io events patch",
			// the pump pods' certificates (pump defaults' certificate), read
			// and written uncached, deleted when turned off
			"cert-manager.io certificates get", "cert-manager.io certificates create", "cert-manager.io certificates update",
			"cert-manager.io certificates delete",
			// each feed namespace's own pump CA (its Issuers), and each
			// feed's ServiceMonitor, likewise
			"cert-manager.io issuers get", "cert-manager.io issuers create", "cert-manager.io issuers update", "cert-manager.io issuers delete",
			"monitoring.coreos.com servicemonitors get", "monitoring.coreos.com servicemonitors create",
			"monitoring.coreos.com servicemonitors update", "monitoring.coreos.com servicemonitors delete",
		})
	// clusterScope: the ClusterRoleBinding of every pump ServiceAccount to
	// system:auth-delegator (the pumps authenticate read API and metrics
	// callers), which the chart makes: the operator reads that one by name
	// and changes its subjects, creates none, lists none, and may bind
	// that ClusterRole only.
	clusterScope = []string{
		"rbac.authorization.k8s.io clusterrolebindings get [ff-flightfeed-pump-auth-delegator]",
		"rbac.authorization.k8s.io clusterrolebindings patch [ff-flightfeed-pump-auth-delegator]",
		"rbac.authorization.k8s.io clusterrolebindings update [ff-flightfeed-pump-auth-delegator]",
		"rbac.authorization.k8s.io clusterroles bind [system:auth-delegator]",
	}
	// metricsAuth: the operator's own secure /metrics (the chart's default)
	// reviews every scraper's token and its `get /metrics`.
	metricsAuth = []string{"authentication.k8s.io tokenreviews create", "authorization.k8s.io subjectaccessreviews create"}
	// secretGrant: bind (never escalate) on the one ClusterRole that may
	// get Secrets, for the operator's own RoleBinding in each namespace
	// holding a FlightFeed.
	secretGrant = []string{"rbac.authorization.k8s.io clusterroles bind [ff-flightfeed-secret-reader]"}
	// leaderScope: the operator's namespace, its leader election Lease.
	leaderScope = []string{"coordination.k8s.io leases create", "coordination.k8s.io leases get", "coordination.k8s.io leases update"}
	// apiServerScope: namespace default, the API server's addresses for
	// the pump pods' egress (networkPolicy.egress.apiServer.cidrs empty).
	apiServerScope = []string{" services get [kubernetes]", "discovery.k8s.io endpointslices get [kubernetes]"}
)

// crud is every verb the operator uses on the objects it owns.
func crud(groupResource string) []string {
	var out []string
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		out = append(out, groupResource+" "+v)
	}
	return out
}

// helmBinary is the pinned helm of hack/helm-check.sh (installed into the
// tool cache the first time).
var helmBinary = sync.OnceValues(func() (string, error) {
	if h := os.Getenv("FLIGHTFEED_HELM"); h != "" {
		return h, nil
	}
	cmd := exec.Command("bash", "hack/cluster/helm.sh")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/cluster/helm.sh: %w\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
})

var repoRoot = func() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}()

// renderChart renders charts/flightfeed as release ff in namespace ns with
// the given helm arguments and returns its objects.
func renderChart(t *testing.T, release, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	helm, err := helmBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, append([]string{"template", release, filepath.Join(kubetest.RepoRoot(t), "charts", "flightfeed"),
		// --skip-tests: what an install creates (the helm test hook's
		// ServiceAccount and RBAC exist only during `helm test`).
		"--namespace", ns, "--kube-version", "1.37.0", "--skip-tests",
		// No default: every install names its registry.
		"--set", "image.repository=registry.example/flightfeed"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return decodeObjects(t, out)
}

func decodeObjects(t *testing.T, doc []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
	for {
		var o unstructured.Unstructured
		if err := dec.Decode(&o.Object); err != nil {
			if err.Error() == "EOF" {
				return objs
			}
			t.Fatal(err)
		}
		if len(o.Object) > 0 {
			objs = append(objs, &o)
		}
	}
}

// grants is what one ServiceAccount may do according to the rendered RBAC:
// scope ("cluster" or a namespace) → "group resource verb" entries.
func grants(t *testing.T, objs []*unstructured.Unstructured, saNS, saName string) map[string][]string {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	var bindings []struct {
		scope string
		ref   rbacv1.RoleRef
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.Role
			convert(t, o, &r)
			roles[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			convert(t, o, &b)
			if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == "ServiceAccount" && s.Namespace == saNS && s.Name == saName
			}) {
				continue
			}
			scope := "cluster"
			if o.GetKind() == "RoleBinding" {
				scope = o.GetNamespace()
			}
			bindings = append(bindings, struct {
				scope string
				ref   rbacv1.RoleRef
			}{scope, b.RoleRef})
		}
	}
	out := map[string][]string{}
	for _, b := range bindings {
		ns := ""
		if b.ref.Kind == "Role" {
			ns = b.scope
		}
		rules, ok := roles[b.ref.Kind+"/"+ns+"/"+b.ref.Name]
		if !ok {
			t.Errorf("binding in %s refers to %s %s, which the chart does not render", b.scope, b.ref.Kind, b.ref.Name)
		}
		out[b.scope] = append(out[b.scope], flatten(t, rules)...)
	}
	for k := range out {
		out[k] = sortedSet(out[k])
	}
	return out
}

func flatten(t *testing.T, rules []rbacv1.PolicyRule) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: nonResourceURLs, which the operator does not use", r)
		}
		names := ""
		if len(r.ResourceNames) > 0 {
			names = " [" + strings.Join(sortedSet(r.ResourceNames), ",") + "]"
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+" "+res+" "+v+names)
				}
			}
		}
	}
	return out
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func convert(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

func join(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	return sortedSet(out)
}

func argsOf(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
			return args
		}
	}
	t.Fatal("no Deployment rendered")
	return nil
}

// The chart grants the operator's ServiceAccount exactly what the code
// calls, in both RBAC modes: no Secret by its own roles anywhere, bind
// (never escalate) on the secret-reader ClusterRole alone; the pump
// defaults the operator reads are valid; the user roles are aggregated; the
// kustomize tree grants the same.
func TestChartGrantsExactlyWhatTheOperatorUses(t *testing.T) {
	const ns, sa = "flightfeed-system", "ff-flightfeed"
	wantArgs := []string{"--leader-elect", "--pump-defaults=/etc/flightfeed/pump/defaults.yaml",
		"--secret-reader-clusterrole=ff-flightfeed-secret-reader", "--auth-delegator-binding=ff-flightfeed-pump-auth-delegator"}
	for _, tc := range []struct {
		name     string
		args     []string
		want     map[string][]string
		wantArgs []string
		noArgs   []string
	}{
		{
			name:   "cluster-wide",
			want:   map[string][]string{"cluster": join(feedScope, secretGrant, clusterScope, metricsAuth), ns: leaderScope, "default": apiServerScope},
			noArgs: []string{"--legacy-leases", "--namespaces", "--api-bind-address"},
		},
		{
			name:     "namespaced",
			args:     []string{"--set", "watchNamespaces={ops,ground}"},
			want:     map[string][]string{"cluster": join(clusterScope, metricsAuth), "ops": join(feedScope, secretGrant), "ground": join(feedScope, secretGrant), ns: leaderScope, "default": apiServerScope},
			wantArgs: []string{"--namespaces=ops,ground"},
			noArgs:   []string{"--legacy-leases"},
		},
		{
			// An upgrade from the release whose pumps ran inside the
			// operator grants nothing more: the operator only reads the
			// old Leases of its own namespace.
			name:   "cluster-wide upgrade",
			args:   []string{"--is-upgrade"},
			want:   map[string][]string{"cluster": join(feedScope, secretGrant, clusterScope, metricsAuth), ns: leaderScope, "default": apiServerScope},
			noArgs: []string{"--legacy-leases"},
		},
		{
			// Plain-HTTP metrics ask the API server nothing.
			name:     "cluster-wide, metrics over plain HTTP",
			args:     []string{"--set", "metrics.secure=false"},
			want:     map[string][]string{"cluster": join(feedScope, secretGrant, clusterScope), ns: leaderScope, "default": apiServerScope},
			wantArgs: []string{"--metrics-secure=false"},
		},
		{
			name:     "namespaced, Kubernetes 1.33",
			args:     []string{"--kube-version", "1.33.4", "--set", "watchNamespaces={ops}"},
			want:     map[string][]string{"cluster": join(clusterScope, metricsAuth), "ops": join(feedScope, secretGrant), ns: leaderScope, "default": apiServerScope},
			wantArgs: []string{"--namespaces=ops"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, "ff", ns, tc.args...)
			got := grants(t, objs, ns, sa)
			for scope, want := range tc.want {
				if !slices.Equal(got[scope], sortedSet(want)) {
					t.Errorf("%s: the operator may\n  %s\nwant exactly\n  %s", scope, strings.Join(got[scope], "\n  "), strings.Join(sortedSet(want), "\n  "))
				}
			}
			for scope := range got {
				if _, ok := tc.want[scope]; !ok {
					t.Errorf("the operator gets rights in %s: %v", scope, got[scope])
				}
				for _, g := range got[scope] {
					if strings.Contains(g, " secrets ") || strings.Contains(g, "escalate") || strings.Contains(g, "*") {
						t.Errorf("%s: the operator may %q: its own roles grant no Secret, no escalate, no wildcard", scope, g)
					}
					// A ClusterRoleBinding it made could bind the secret
					// reader cluster-wide; FlightFeeds it made would open
					// namespaces to the admission policy.
					if (strings.Contains(g, " clusterrolebindings ") || strings.Contains(g, " flightfeeds ")) && strings.HasSuffix(g, " create") {
						t.Errorf("%s: the operator may %q", scope, g)
					}
				}
			}
			args := argsOf(t, objs)
			for _, a := range append(slices.Clone(wantArgs), tc.wantArgs...) {
				if !slices.Contains(args, a) {
					t.Errorf("operator args %v lack %s", args, a)
				}
			}
			for _, a := range tc.noArgs {
				if slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, a) }) {
					t.Errorf("operator args %v have %s", args, a)
				}
			}
			// The secret reader: get on Secrets, bound by nothing the chart
			// renders (the operator binds itself per feed namespace). The
			// pumps' auth-delegator binding: the chart's, with no subjects
			// (no key at all: Helm's upgrades keep the operator's).
			var reader *unstructured.Unstructured
			delegator := false
			policies := map[string]int{}
			for _, o := range objs {
				switch o.GetKind() {
				case "ClusterRole":
					if o.GetName() == "ff-flightfeed-secret-reader" {
						reader = o
					}
				case "ClusterRoleBinding", "RoleBinding":
					var b rbacv1.RoleBinding
					convert(t, o, &b)
					if b.RoleRef.Name == "ff-flightfeed-secret-reader" {
						t.Errorf("%s %s binds the secret reader", o.GetKind(), o.GetName())
					}
					if o.GetName() == "ff-flightfeed-pump-auth-delegator" {
						delegator = true
						if _, ok := o.Object["subjects"]; ok || b.RoleRef.Name != "system:auth-delegator" || o.GetKind() != "ClusterRoleBinding" {
							t.Errorf("the pumps' binding: %v, want a ClusterRoleBinding to system:auth-delegator with no subjects key", o.Object)
						}
					}
				case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
					policies[o.GetName()]++
				}
			}
			if !delegator {
				t.Error("no ClusterRoleBinding ff-flightfeed-pump-auth-delegator: the operator creates none")
			}
			// Each admission policy and its binding (what they refuse:
			// TestOperatorTokenReachesNoSecretOutsideFeedNamespaces).
			for _, p := range []string{"ff-flightfeed-operator-labels", "ff-flightfeed-operator-namespaces", "ff-flightfeed-operator-rolebindings", "ff-flightfeed-operator-pods"} {
				if policies[p] != 2 {
					t.Errorf("admission policy %s: %d objects, want the policy and its binding", p, policies[p])
				}
			}
			if reader == nil {
				t.Fatal("no ClusterRole ff-flightfeed-secret-reader")
			}
			var r rbacv1.ClusterRole
			convert(t, reader, &r)
			if got := sortedSet(flatten(t, r.Rules)); !slices.Equal(got, []string{" secrets get"}) {
				t.Errorf("the secret reader grants %v, want get on Secrets", got)
			}
		})
	}

	t.Run("pump defaults", func(t *testing.T) {
		for _, tc := range []struct {
			args   []string
			netpol bool
		}{
			{netpol: true},
			{args: []string{"--set", "networkPolicy.enabled=false", "--set", "api.enabled=false", "--set", "lease.duration=20s"}},
		} {
			objs := renderChart(t, "ff", ns, tc.args...)
			d := pumpDefaultsOf(t, objs)
			if want := imageOf(t, objs); d.Image != want {
				t.Errorf("%v: the pumps run %q, want the operator's image %q", tc.args, d.Image, want)
			}
			if (d.NetworkPolicy != nil) != tc.netpol {
				t.Errorf("%v: pump NetworkPolicy %+v, want one: %v", tc.args, d.NetworkPolicy, tc.netpol)
			}
			// DNS alone as written, to the cluster's DNS pods; the API
			// server's ports (its addresses looked up); nothing for the
			// mailboxes, databases and brokers, which the operator opens
			// per feed to what each resolves to.
			if tc.netpol && (len(d.NetworkPolicy.Egress) != 1 || len(d.NetworkPolicy.Egress[0].To) != 1 || d.NetworkPolicy.Egress[0].To[0].PodSelector == nil ||
				d.NetworkPolicy.APIServer == nil || len(d.NetworkPolicy.APIServer.Ports) != 2 || len(d.NetworkPolicy.APIServer.CIDRs) != 0 ||
				len(d.NetworkPolicy.IngressFrom) != 1) {
				t.Errorf("pump NetworkPolicy %+v: want DNS to the DNS pods and the API server, no blanket rule", d.NetworkPolicy)
			}
			lease := "--lease-duration=15s"
			if !tc.netpol {
				lease = "--lease-duration=20s"
				if d.Ports.API >= 0 {
					t.Errorf("api.enabled=false: the pumps serve the read API on %d", d.Ports.API)
				}
			}
			for _, a := range []string{lease, "--renew-deadline=10s", "--retry-period=2s", "--secret-resync-period=1m", "--metrics-secure=true", "--zap-log-level=info"} {
				if !slices.Contains(d.Args, a) {
					t.Errorf("%v: pump args %v lack %s", tc.args, d.Args, a)
				}
			}
			if d.Resources.Limits.Memory().String() != "512Mi" || d.TerminationGracePeriod == nil {
				t.Errorf("%v: pump resources %v, grace period %v", tc.args, d.Resources, d.TerminationGracePeriod)
			}
		}
	})

	t.Run("admission policy opt-out", func(t *testing.T) {
		for _, o := range renderChart(t, "ff", ns, "--set", "rbac.admissionPolicy=false") {
			if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
				t.Errorf("rbac.admissionPolicy=false renders %s %s", o.GetKind(), o.GetName())
			}
		}
	})

	t.Run("user roles", func(t *testing.T) {
		objs := renderChart(t, "ff", ns)
		want := map[string]struct {
			labels []string
			rules  []string
		}{
			"ff-flightfeed-viewer": {
				labels: []string{"aggregate-to-view", "aggregate-to-edit", "aggregate-to-admin"},
				rules: join(flatten(t, []rbacv1.PolicyRule{{APIGroups: []string{"flightfeed.aero"},
					Resources: []string{"flightfeeds", "flightfeeds/status", "flightfeeddays", "flightfeeddays/status"},
					Verbs:     []string{"get", "list", "watch"}}})),
			},
			// Not aggregated by default: a FlightFeed makes the operator
			// connect where its author says with the namespace's Secrets.
			"ff-flightfeed-editor": {
				labels: nil,
				rules: join(flatten(t, []rbacv1.PolicyRule{{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds"},
					Verbs: []string{"create", "update", "patch", "delete", "deletecollection"}}})),
			},
			// For the ServiceAccount whose tokens dead|parked|replay
			// --feed send: what the read API checks, never aggregated.
			"ff-flightfeed-operations": {
				labels: nil,
				rules: join(flatten(t, []rbacv1.PolicyRule{
					{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds", "flightfeeds/messages"}, Verbs: []string{"get"}},
					{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/replays"}, Verbs: []string{"get", "create"}},
					{APIGroups: []string{"flightfeed.aero"}, Resources: []string{"flightfeeds/verifications"}, Verbs: []string{"create"}},
				})),
			},
		}
		for _, o := range objs {
			w, ok := want[o.GetName()]
			if !ok || o.GetKind() != "ClusterRole" {
				continue
			}
			delete(want, o.GetName())
			var r rbacv1.ClusterRole
			convert(t, o, &r)
			if got := sortedSet(flatten(t, r.Rules)); !slices.Equal(got, w.rules) {
				t.Errorf("%s: %v, want %v", o.GetName(), got, w.rules)
			}
			if got := aggregations(r.Labels); !slices.Equal(got, sortedSet(w.labels)) {
				t.Errorf("%s is aggregated into %v, want %v", o.GetName(), got, w.labels)
			}
		}
		for name := range want {
			t.Errorf("no ClusterRole %s", name)
		}
		// rbac.aggregateToEdit: every namespace editor and admin may create
		// FlightFeeds.
		var editor *unstructured.Unstructured
		for _, o := range renderChart(t, "ff", ns, "--set", "rbac.aggregateToEdit=true") {
			if o.GetKind() == "ClusterRole" && o.GetName() == "ff-flightfeed-editor" {
				editor = o
			}
		}
		if editor == nil {
			t.Fatal("rbac.aggregateToEdit=true: no ClusterRole ff-flightfeed-editor")
		}
		if got := aggregations(editor.GetLabels()); !slices.Equal(got, []string{"aggregate-to-admin", "aggregate-to-edit"}) {
			t.Errorf("rbac.aggregateToEdit=true: the editor is aggregated into %v, want edit and admin", got)
		}
		if n := len(renderChart(t, "ff", ns, "--set", "rbac.aggregate=false")); n != len(objs)-3 {
			t.Errorf("rbac.aggregate=false renders %d objects, want %d", n, len(objs)-3)
		}
	})

	t.Run("kustomize user roles", func(t *testing.T) {
		want := map[string][]string{"viewer": {"aggregate-to-admin", "aggregate-to-edit", "aggregate-to-view"}, "editor": nil, "operations": nil}
		for _, o := range decodeObjects(t, readFile(t, filepath.Join(kubetest.RepoRoot(t), "config", "rbac", "aggregate_roles.yaml"))) {
			w, ok := want[o.GetName()]
			if !ok {
				t.Errorf("unexpected %s %s", o.GetKind(), o.GetName())
				continue
			}
			delete(want, o.GetName())
			if got := aggregations(o.GetLabels()); !slices.Equal(got, w) {
				t.Errorf("config/rbac %s is aggregated into %v, want %v", o.GetName(), got, w)
			}
		}
		for name := range want {
			t.Errorf("config/rbac/aggregate_roles.yaml has no ClusterRole %s", name)
		}
	})

	t.Run("kustomize", func(t *testing.T) {
		root := kubetest.RepoRoot(t)
		rulesOf := func(file, kind, name string) []string {
			t.Helper()
			for _, o := range decodeObjects(t, readFile(t, filepath.Join(root, "config", file))) {
				if o.GetKind() == kind && (name == "" || o.GetName() == name) {
					var r rbacv1.Role
					convert(t, o, &r)
					return sortedSet(flatten(t, r.Rules))
				}
			}
			t.Fatalf("config/%s has no %s %s", file, kind, name)
			return nil
		}
		kustomized := func(s []string) []string {
			out := make([]string, len(s))
			for i, e := range s {
				out[i] = strings.ReplaceAll(e, "ff-flightfeed-", "flightfeed-")
			}
			return sortedSet(out)
		}
		check := func(what string, got, want []string) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s:\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		}
		check("config/rbac/role.yaml (generated)", rulesOf("rbac/role.yaml", "ClusterRole", ""), sortedSet(feedScope))
		check("config/namespaced/feeds_role.yaml", rulesOf("namespaced/feeds_role.yaml", "Role", ""), kustomized(join(feedScope, secretGrant)))
		check("config/rbac/pump_auth_role.yaml", rulesOf("rbac/pump_auth_role.yaml", "ClusterRole", "manager-pump-auth"), kustomized(join(clusterScope, metricsAuth)))
		check("config/rbac/secret_reader_role.yaml binder", rulesOf("rbac/secret_reader_role.yaml", "ClusterRole", "secret-reader-binder"), kustomized(secretGrant))
		check("config/rbac/secret_reader_role.yaml", rulesOf("rbac/secret_reader_role.yaml", "ClusterRole", "secret-reader"), []string{" secrets get"})
		check("config/rbac/leader_election_role.yaml", rulesOf("rbac/leader_election_role.yaml", "Role", ""), sortedSet(leaderScope))
		// The admission policies: the chart's, for the names the kustomize
		// tree gives (namespace flightfeed-system, ServiceAccount
		// flightfeed-manager, prefix flightfeed-).
		specs := func(objs []*unstructured.Unstructured, prefix string) map[string]any {
			out := map[string]any{}
			for _, o := range objs {
				if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
					out[o.GetKind()+"/"+prefix+o.GetName()] = o.Object["spec"]
				}
			}
			return out
		}
		want := specs(renderChart(t, "flightfeed", "flightfeed-system", "--set", "serviceAccount.name=flightfeed-manager"), "")
		got := specs(decodeObjects(t, readFile(t, filepath.Join(root, "config", "rbac", "admission_policy.yaml"))), "flightfeed-")
		if len(want) != 8 || !equality.Semantic.DeepEqual(got, want) {
			gotYAML, _ := yaml.Marshal(got)
			wantYAML, _ := yaml.Marshal(want)
			t.Errorf("config/rbac/admission_policy.yaml:\n%s\nwant the chart's:\n%s", gotYAML, wantYAML)
		}
		// The pump defaults of both kustomize trees load.
		for _, file := range []string{"manager/pump_defaults.yaml", "default/pump_defaults_network_policy.yaml"} {
			pumpDefaultsOf(t, decodeObjects(t, readFile(t, filepath.Join(root, "config", file))))
		}
	})
}

// pumpDefaultsOf loads the pump defaults ConfigMap among objs as
// `flightfeed manager --pump-defaults` does (unknown keys are errors).
func pumpDefaultsOf(t *testing.T, objs []*unstructured.Unstructured) feedobjects.PumpDefaults {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || !strings.HasSuffix(o.GetName(), "pump-defaults") {
			continue
		}
		doc, _, _ := unstructured.NestedString(o.Object, "data", "defaults.yaml")
		d, err := feedobjects.ParsePumpDefaults([]byte(doc))
		if err != nil {
			t.Fatalf("the pump defaults %s: %v\n%s", o.GetName(), err, doc)
		}
		return d
	}
	t.Fatal("no pump defaults ConfigMap")
	return feedobjects.PumpDefaults{}
}

func imageOf(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			c, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			img, _, _ := unstructured.NestedString(c[0].(map[string]any), "image")
			return img
		}
	}
	t.Fatal("no Deployment rendered")
	return ""
}

// aggregations lists the built-in roles a ClusterRole's labels aggregate
// it into ("aggregate-to-edit", ...), sorted.
func aggregations(labels map[string]string) []string {
	var out []string
	for k, v := range labels {
		if a, ok := strings.CutPrefix(k, "rbac.authorization.k8s.io/"); ok && strings.HasPrefix(a, "aggregate-to-") && v == "true" {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// impersonate is restCfg acting as ServiceAccount ns/name, and a client
// with it.
func impersonate(t *testing.T, scheme client.Options, ns, name string) (*rest.Config, client.WithWatch) {
	t.Helper()
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	c, err := client.NewWithWatch(cfg, scheme)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// mustForbid fails unless reading Secret ns/name is forbidden to c.
func mustForbid(t *testing.T, c client.Client, who, ns, name string) {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s); !apierrors.IsForbidden(err) {
		t.Fatalf("%s reading Secret %s/%s: %v, want forbidden", who, ns, name, err)
	}
}

// The default install's RBAC and admission policies, as the chart renders
// them and nothing more: the operator (impersonating its ServiceAccount,
// leader-elected, with the chart's pump defaults) turns a FlightFeed into
// its objects — the pump Deployment, ServiceAccount, Role granting exactly
// the Secrets the feed names, RoleBinding, Service, Lease, the operator's
// own binding to the secret reader, the subjects of the chart's
// auth-delegator binding — without escalate, and still
// cannot read a Secret in a namespace holding no FlightFeed; then a pump
// pod (impersonating <feed>-pump, the operator's objects its only rights)
// runs the feed end to end — Secrets appearing after their FlightFeed, the
// real pump's request, the AODB's answer as the day's snapshot, the
// FlightFeedDay, Ready, Events — and cannot read a Secret its feed does
// not name.
func TestOperatorAndPumpRunUnderTheChartsRBAC(t *testing.T) {
	h := newHarness(t)
	admin := h.c
	opNS := h.ns + "-sys"
	if len(opNS) > 63 {
		opNS = "sys-" + h.ns[len(h.ns)-20:]
	}
	otherNS := "other-" + h.ns[len(h.ns)-6:]
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNS}})
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}})
	for _, ns := range []string{otherNS, opNS} {
		h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-db", Namespace: ns,
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "*"}},
			StringData: map[string]string{"dsn": "not yours"}})
	}
	// ClusterRoles are cluster-wide: the release name keeps tests apart.
	release := "rb" + h.ns[len(h.ns)-6:]
	full := release + "-flightfeed"
	objs := renderChart(t, release, opNS, "--set", "crds.enabled=false")
	var sa string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			// The chart's RBAC and admission policies, as rendered;
			// nothing else is granted.
		default:
			continue
		}
		if err := admin.Create(h.ctx(), o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if o.GetNamespace() == "" {
			t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
		}
	}
	opts := client.Options{Scheme: admin.Scheme()}
	opCfg, asOperator := impersonate(t, opts, opNS, sa)
	// The check below that the operator still cannot write where no
	// FlightFeed is needs the namespaces policy in effect from here on.
	awaitPolicy(h.ctx(), t, asOperator, "operator-namespaces",
		ours(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: otherNS}}))
	mustForbid(t, asOperator, "the operator", otherNS, "other-db")
	mustForbid(t, asOperator, "the operator", opNS, "other-db")

	// The operator, as the chart runs it (its flags' values: secure
	// metrics).
	pump := pumpDefaultsOf(t, objs)
	pump.Image = "flightfeed:test"
	metricsAddr := loopback.FreeAddr(t)
	op, err := operator.New(operator.Options{
		RestConfig: opCfg, MetricsAddr: metricsAddr, ProbeAddr: "0", Namespace: opNS,
		LeaderElection: true, Identity: "operator-a", LeaseDuration: testLease, RenewDeadline: testRenew, RetryPeriod: testRetry,
		Pump: pump,
		SecretGrant: &controllers.SecretGrant{ClusterRole: full + "-secret-reader",
			ServiceAccount: types.NamespacedName{Namespace: opNS, Name: sa}, BindingName: full + "-secret-reader"},
		AuthDelegator: full + "-pump-auth-delegator",
		Log:           ctrl.Log.WithName("operator"),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})

	// The operator's /metrics answers a scraper bound to the chart's
	// metrics-reader ClusterRole: the operator reviews its token and its
	// `get /metrics` with its own rights.
	h.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: opNS}})
	scraperBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: full + "-test-scraper"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: opNS, Name: "scraper"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: full + "-metrics-reader"}}
	h.create(scraperBinding)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), scraperBinding) })
	scraper := token(t, opNS, "scraper")
	await.Eventually(t, "the operator's /metrics to answer the chart's scraper", waitLong, func() (bool, string) {
		code, body := getAs(t, scraper, "https://"+metricsAddr+"/metrics")
		return code == http.StatusOK && bytes.Contains(body, []byte("controller_runtime_reconcile_total")),
			fmt.Sprint(code, " ", string(body[:min(len(body), 200)]))
	})

	// The FlightFeed first, its Secrets later (the pump reads them again at
	// its next resync).
	key := h.feedToday("pek")
	name := feednames.Pump(key.Name)
	var role rbacv1.Role
	await.Eventually(t, "the operator's objects of the feed", waitLong, func() (bool, string) {
		var missing []string
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}, &rbacv1.RoleBinding{}, &corev1.Service{}} {
			if err := admin.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: name}, o); err != nil {
				missing = append(missing, fmt.Sprintf("%T: %v", o, err))
			}
		}
		if err := admin.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: name}, &role); err != nil {
			missing = append(missing, "Role: "+err.Error())
		}
		var lease coordinationv1.Lease
		if err := admin.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: feednames.Lease(key)}, &lease); err != nil {
			missing = append(missing, "Lease: "+err.Error())
		}
		var self rbacv1.RoleBinding
		if err := admin.Get(h.ctx(), types.NamespacedName{Namespace: key.Namespace, Name: full + "-secret-reader"}, &self); err != nil {
			missing = append(missing, "the operator's own RoleBinding: "+err.Error())
		} else if self.RoleRef.Name != full+"-secret-reader" || len(self.Subjects) != 1 || self.Subjects[0].Name != sa {
			missing = append(missing, fmt.Sprintf("the operator's own RoleBinding: %+v %+v", self.RoleRef, self.Subjects))
		}
		var crb rbacv1.ClusterRoleBinding
		if err := admin.Get(h.ctx(), types.NamespacedName{Name: full + "-pump-auth-delegator"}, &crb); err != nil {
			missing = append(missing, "the auth-delegator binding: "+err.Error())
		} else if !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Namespace == key.Namespace && s.Name == name }) {
			missing = append(missing, fmt.Sprintf("the auth-delegator binding names %+v", crb.Subjects))
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	// The pump's Role: the generated pump rules (config/rbac/pump/role.yaml),
	// named; TokenReview and SubjectAccessReview through system:auth-delegator.
	var secretNames []string
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") {
			secretNames = sortedSet(r.ResourceNames)
		}
		if len(r.ResourceNames) == 0 && !slices.Contains(r.Resources, "flightfeeddays") && !slices.Contains(r.Resources, "flightfeeddays/status") &&
			!slices.Contains(r.Resources, "events") {
			t.Errorf("the pump's Role grants %+v to every name", r)
		}
	}
	if !slices.Equal(secretNames, []string{"pek-db", "pek-mailbox"}) {
		t.Errorf("the pump may get Secrets %v, want exactly the feed's [pek-db pek-mailbox]", secretNames)
	}
	var generated []string
	for _, o := range decodeObjects(t, readFile(t, filepath.Join(kubetest.RepoRoot(t), "config", "rbac", "pump", "role.yaml"))) {
		var r rbacv1.ClusterRole
		convert(t, o, &r)
		for _, g := range flatten(t, r.Rules) {
			if !strings.HasPrefix(g, "authentication.k8s.io ") && !strings.HasPrefix(g, "authorization.k8s.io ") {
				generated = append(generated, g)
			}
		}
	}
	unnamed := slices.Clone(role.Rules)
	for i := range unnamed {
		unnamed[i].ResourceNames = nil
	}
	if got := sortedSet(flatten(t, unnamed)); !slices.Equal(got, sortedSet(generated)) {
		t.Errorf("the pump's Role (names aside):\n  %s\nconfig/rbac/pump/role.yaml:\n  %s", strings.Join(got, "\n  "), strings.Join(sortedSet(generated), "\n  "))
	}
	// Still no Secret where no FlightFeed is, and no object of its own
	// there: the admission policies were in effect while it worked.
	mustForbid(t, asOperator, "the operator", otherNS, "other-db")
	if err := asOperator.Create(h.ctx(), ours(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: otherNS}})); !refusal(err) {
		t.Fatalf("the operator making a ServiceAccount where no FlightFeed is: %v, want refused", err)
	}
	var list corev1.SecretList
	if err := asOperator.List(h.ctx(), &list, client.InNamespace(key.Namespace)); !apierrors.IsForbidden(err) {
		t.Fatalf("the operator listing Secrets: %v, want forbidden", err)
	}

	// A pump pod of the feed, under the ServiceAccount the operator made.
	pumpCfg, asPump := impersonate(t, opts, key.Namespace, name)
	h.startReplicaWith("pek-pump-a", pumppod.StartFeed, func(o *pumppod.Options) {
		o.RestConfig = pumpCfg
		o.Feed = key
		o.Namespaces = nil
	})
	h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSecretUnavailable)
	h.secrets("pek")
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pek-other", Namespace: key.Namespace,
		Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek"}},
		StringData: map[string]string{"dsn": "not the feed's"}})

	mbox, loc, day := h.pumpRequest()
	resp := simulate.Response(simulate.Options{Day: day, Flights: 2, Seed: 1, FirstSeqn: 1, Location: loc})
	mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Now(), Body: resp.Body})
	var ledger store.LedgerDay
	await.Eventually(t, "the day's snapshot in the ledger", waitLong, func() (bool, string) {
		ledger = h.ledger()[day]
		return ledger.Version == 1 && ledger.Flights == 2, fmt.Sprintf("%+v", ledger)
	})
	h.waitDay(key, ledger)
	h.waitReady(key)
	h.waitEvent(key, pumppod.ReasonLeaderElected, "pek-pump-a")
	if l, err := h.lease(key); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "pek-pump-a" {
		t.Fatalf("the feed's Lease: %+v, %v", l.Spec, err)
	}
	// A standby watches its feed's Lease (by its name: resourceNames), and
	// no other Lease.
	pumpKube, err := kubernetes.NewForConfig(pumpCfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pumpKube.CoordinationV1().Leases(key.Namespace).Watch(h.ctx(),
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", feednames.Lease(key)).String()})
	if err != nil {
		t.Fatalf("the pump watching its feed's Lease: %v", err)
	}
	w.Stop()
	if w, err := pumpKube.CoordinationV1().Leases(key.Namespace).Watch(h.ctx(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		if err == nil {
			w.Stop()
		}
		t.Fatalf("the pump watching every Lease of the namespace: %v, want forbidden", err)
	}
	// The pump reads the Secrets its feed names, and no other.
	var s corev1.Secret
	if err := asPump.Get(h.ctx(), client.ObjectKey{Namespace: key.Namespace, Name: "pek-db"}, &s); err != nil {
		t.Fatalf("the pump reading its feed's Secret: %v", err)
	}
	mustForbid(t, asPump, "the pump", key.Namespace, "pek-other")
	mustForbid(t, asPump, "the pump", otherNS, "other-db")
	if err := asPump.List(h.ctx(), &list, client.InNamespace(key.Namespace)); !apierrors.IsForbidden(err) {
		t.Fatalf("the pump listing Secrets: %v, want forbidden", err)
	}
}
