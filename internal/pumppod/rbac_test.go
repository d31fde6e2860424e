package pumppod_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/pumpserver"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// What the manager's code calls, per scope: "group resource verb". Every
// rule of the chart's manager roles must be here and every entry must be
// granted; TestManagerRunsUnderTheNamespacedRole proves the set enough.
var (
	// feedScope: in every namespace whose FlightFeeds the manager runs.
	feedScope = []string{
		"flightfeed.aero flightfeeds get", "flightfeed.aero flightfeeds list", "flightfeed.aero flightfeeds watch",
		"flightfeed.aero flightfeeds patch", // the finalizer
		"flightfeed.aero flightfeeds/status get", "flightfeed.aero flightfeeds/status patch",
		"flightfeed.aero flightfeeds/finalizers update",
		"flightfeed.aero flightfeeddays get", "flightfeed.aero flightfeeddays list", "flightfeed.aero flightfeeddays watch",
		"flightfeed.aero flightfeeddays create", "flightfeed.aero flightfeeddays delete",
		"flightfeed.aero flightfeeddays/status get", "flightfeed.aero flightfeeddays/status patch",
		// Read one at a time by name, never listed or watched: the
		// manager uses only those labelled flightfeed.aero/secret=true.
		" secrets get",
		"events.k8s.io events create", "events.k8s.io events patch",
	}
	// leaseScope: the manager's own namespace, where every feed's Lease is.
	leaseScope = []string{
		"coordination.k8s.io leases get", "coordination.k8s.io leases create", "coordination.k8s.io leases update",
		"coordination.k8s.io leases delete", // the Lease of a deleted feed
	}
	// migrationScope: added to feedScope while migrating (--legacy-leases).
	migrationScope = []string{
		"coordination.k8s.io leases get", "coordination.k8s.io leases create", "coordination.k8s.io leases update",
	}
	// clusterScope: cluster-scoped calls: the read API and the secure
	// metrics authenticate tokens and authorize their users through the
	// API server (controllers/readapi_rbac.go).
	clusterScope = []string{
		"authentication.k8s.io tokenreviews create",
		"authorization.k8s.io subjectaccessreviews create",
	}
)

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
	return filepath.Join(wd, "..")
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
		"--namespace", ns, "--kube-version", "1.37.0", "--skip-tests"}, args...)...)
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
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: resourceNames or nonResourceURLs, which the manager does not use", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+" "+res+" "+v)
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

// The chart grants the manager's ServiceAccount exactly what the code
// calls, in both RBAC modes and while migrating Leases; the user roles are
// aggregated; the kustomize namespaced Role equals the generated rules.
func TestChartGrantsExactlyWhatTheManagerUses(t *testing.T) {
	const ns, sa = "flightfeed-system", "ff-flightfeed"
	for _, tc := range []struct {
		name     string
		args     []string
		want     map[string][]string
		wantArgs []string
		noArgs   []string
	}{
		{
			name: "cluster-wide",
			want: map[string][]string{"cluster": join(feedScope, clusterScope), ns: join(leaseScope)},
			// A fresh install does not migrate.
			noArgs: []string{"--legacy-leases", "--namespaces"},
		},
		{
			name:     "namespaced",
			args:     []string{"--set", "watchNamespaces={ops,ground}"},
			want:     map[string][]string{"cluster": join(clusterScope), "ops": join(feedScope), "ground": join(feedScope), ns: join(leaseScope)},
			wantArgs: []string{"--namespaces=ops,ground"},
			noArgs:   []string{"--legacy-leases"},
		},
		{
			name:     "cluster-wide upgrade",
			args:     []string{"--is-upgrade"},
			want:     map[string][]string{"cluster": join(feedScope, migrationScope, clusterScope), ns: join(leaseScope)},
			wantArgs: []string{"--legacy-leases"},
		},
		{
			name:     "namespaced upgrade",
			args:     []string{"--is-upgrade", "--set", "watchNamespaces={ops}"},
			want:     map[string][]string{"cluster": join(clusterScope), "ops": join(feedScope, migrationScope), ns: join(leaseScope)},
			wantArgs: []string{"--legacy-leases", "--namespaces=ops"},
		},
		{
			name:   "upgrade, migration off",
			args:   []string{"--is-upgrade", "--set", "leaseMigration=false"},
			want:   map[string][]string{"cluster": join(feedScope, clusterScope), ns: join(leaseScope)},
			noArgs: []string{"--legacy-leases"},
		},
		{
			// Nothing watches Secrets, so an API server without WatchList
			// by default needs no list either.
			name:   "cluster-wide, Kubernetes 1.33",
			args:   []string{"--kube-version", "1.33.4"},
			want:   map[string][]string{"cluster": join(feedScope, clusterScope), ns: join(leaseScope)},
			noArgs: []string{"--legacy-leases"},
		},
		{
			name:     "namespaced, Kubernetes 1.33",
			args:     []string{"--kube-version", "1.33.4", "--set", "watchNamespaces={ops}"},
			want:     map[string][]string{"cluster": join(clusterScope), "ops": join(feedScope), ns: join(leaseScope)},
			wantArgs: []string{"--namespaces=ops"},
			noArgs:   []string{"--legacy-leases"},
		},
		{
			name:     "install, migration on",
			args:     []string{"--set", "leaseMigration=true"},
			want:     map[string][]string{"cluster": join(feedScope, migrationScope, clusterScope), ns: join(leaseScope)},
			wantArgs: []string{"--legacy-leases"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, "ff", ns, tc.args...)
			got := grants(t, objs, ns, sa)
			for scope := range tc.want {
				if len(tc.want[scope]) == 0 {
					delete(tc.want, scope)
				}
			}
			for scope, want := range tc.want {
				if !slices.Equal(got[scope], want) {
					t.Errorf("%s: the manager may\n  %s\nwant exactly\n  %s", scope, strings.Join(got[scope], "\n  "), strings.Join(want, "\n  "))
				}
			}
			for scope := range got {
				if _, ok := tc.want[scope]; !ok {
					t.Errorf("the manager gets rights in %s: %v", scope, got[scope])
				}
				for _, g := range got[scope] {
					if strings.HasPrefix(g, " secrets ") && g != " secrets get" {
						t.Errorf("%s: the manager may %q; Secrets are only read by name", scope, g)
					}
				}
			}
			args := argsOf(t, objs)
			for _, a := range tc.wantArgs {
				if !slices.Contains(args, a) {
					t.Errorf("manager args %v lack %s", args, a)
				}
			}
			for _, a := range tc.noArgs {
				if slices.ContainsFunc(args, func(s string) bool { return strings.HasPrefix(s, a) }) {
					t.Errorf("manager args %v have %s", args, a)
				}
			}
		})
	}

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
		if n := len(renderChart(t, "ff", ns, "--set", "rbac.aggregate=false")); n != len(objs)-2 {
			t.Errorf("rbac.aggregate=false renders %d objects, want %d", n, len(objs)-2)
		}
	})

	t.Run("kustomize user roles", func(t *testing.T) {
		want := map[string][]string{"viewer": {"aggregate-to-admin", "aggregate-to-edit", "aggregate-to-view"}, "editor": nil}
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

	t.Run("kustomize namespaced Role", func(t *testing.T) {
		root := kubetest.RepoRoot(t)
		generated := map[string][]string{}
		for _, o := range decodeObjects(t, readFile(t, filepath.Join(root, "config", "rbac", "role.yaml"))) {
			var r rbacv1.Role
			convert(t, o, &r)
			generated[o.GetKind()] = sortedSet(flatten(t, r.Rules))
		}
		if !slices.Equal(generated["ClusterRole"], join(feedScope, clusterScope)) {
			t.Errorf("config/rbac/role.yaml ClusterRole: %v, want %v", generated["ClusterRole"], join(feedScope, clusterScope))
		}
		if !slices.Equal(generated["Role"], join(leaseScope)) {
			t.Errorf("config/rbac/role.yaml Role: %v, want %v", generated["Role"], join(leaseScope))
		}
		for _, o := range decodeObjects(t, readFile(t, filepath.Join(root, "config", "namespaced", "feeds_role.yaml"))) {
			if o.GetKind() != "Role" {
				continue
			}
			var r rbacv1.Role
			convert(t, o, &r)
			if got := sortedSet(flatten(t, r.Rules)); !slices.Equal(got, join(feedScope)) {
				t.Errorf("config/namespaced/feeds_role.yaml: %v, want %v", got, join(feedScope))
			}
		}
		// The namespaced install's only cluster-wide rules: the token and
		// access reviews of the read API and the secure metrics.
		auth := 0
		for _, o := range decodeObjects(t, readFile(t, filepath.Join(root, "config", "namespaced", "auth_role.yaml"))) {
			if o.GetKind() != "ClusterRole" {
				continue
			}
			auth++
			var r rbacv1.ClusterRole
			convert(t, o, &r)
			if got := sortedSet(flatten(t, r.Rules)); !slices.Equal(got, join(clusterScope)) {
				t.Errorf("config/namespaced/auth_role.yaml: %v, want %v", got, join(clusterScope))
			}
		}
		if auth != 1 {
			t.Errorf("config/namespaced/auth_role.yaml has %d ClusterRoles, want 1", auth)
		}
	})
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

// The manager runs a feed end to end — Secrets appearing after their
// FlightFeed, the real pump's request, the AODB's answer as the day's
// snapshot, the FlightFeedDay, Ready, Events, then the deletion and its
// Lease's removal — as the chart's namespaced-mode ServiceAccount
// (impersonated), with only the RBAC the chart renders for it.
func TestManagerRunsUnderTheNamespacedRole(t *testing.T) {
	h := newHarness(t)
	admin := h.c
	mgrNS := h.ns + "-sys"
	if len(mgrNS) > 63 {
		mgrNS = "sys-" + h.ns[len(h.ns)-20:]
	}
	h.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgrNS}})
	// ClusterRoles are cluster-wide: the release name keeps tests apart.
	release := "rb" + h.ns[len(h.ns)-6:]
	objs := renderChart(t, release, mgrNS, "--set", "watchNamespaces={"+h.ns+"}", "--set", "crds.enabled=false")
	var sa string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			// The chart's RBAC, as rendered; nothing else is granted.
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
	user := "system:serviceaccount:" + mgrNS + ":" + sa

	// The impersonated ServiceAccount may not read Secrets elsewhere.
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + mgrNS, "system:authenticated"}}
	asSA, err := client.NewWithWatch(cfg, client.Options{Scheme: admin.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := asSA.Get(h.ctx(), client.ObjectKey{Namespace: mgrNS, Name: "none"}, &s); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount reading a Secret outside the watched namespace: %v, want forbidden", err)
	}
	var list corev1.SecretList
	if err := asSA.List(h.ctx(), &list, client.InNamespace(h.ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount listing Secrets: %v, want forbidden", err)
	}
	if w, err := asSA.Watch(h.ctx(), &corev1.SecretList{}, client.InNamespace(h.ns)); !apierrors.IsForbidden(err) {
		if w != nil {
			w.Stop()
		}
		t.Fatalf("the ServiceAccount watching Secrets: %v, want forbidden", err)
	}

	h.startReplicaWith("replica-a", pumppod.StartFeed, func(o *pumpserver.Options) {
		o.RestConfig = cfg
	})

	// The FlightFeed first: its missing Secrets are reported; the manager
	// reads them again at its next resync (nothing watches Secrets).
	key := h.feedToday("pek")
	h.waitCondition(key, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSecretUnavailable)
	h.secrets("pek")

	mbox, loc, day := h.pumpRequest()
	resp := simulate.Response(simulate.Options{Day: day, Flights: 2, Seed: 1, FirstSeqn: 1, Location: loc})
	if _, err := mbox.ExecContext(h.ctx(), `INSERT INTO CMINMSGS (CMINMSGS_DATE_RECEIVED, CMINMSGS_CLOB_MSG) VALUES (?, ?)`,
		time.Now().UTC(), resp.Body); err != nil {
		t.Fatal(err)
	}
	var ledger store.LedgerDay
	await.Eventually(t, "the day's snapshot in the ledger", waitLong, func() (bool, string) {
		ledger = h.ledger()[day]
		return ledger.Version == 1 && ledger.Flights == 2, fmt.Sprintf("%+v", ledger)
	})
	h.waitDay(key, ledger)
	h.waitReady(key)
	h.waitEvent(key, pumppod.ReasonLeaderElected, "replica-a")
	var lease struct{ holder string }
	await.Eventually(t, "the Lease in the manager's namespace", waitLong, func() (bool, string) {
		l, err := h.leaseIn(mgrNS, key)
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.HolderIdentity != nil {
			lease.holder = *l.Spec.HolderIdentity
		}
		return lease.holder == "replica-a", lease.holder
	})

	if err := admin.Delete(h.ctx(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flightfeed.aero/v1alpha1", "kind": "FlightFeed",
		"metadata": map[string]any{"namespace": key.Namespace, "name": key.Name}}}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the FlightFeed and its Lease gone", waitLong, func() (bool, string) {
		_, ferr := h.getFeed(key)
		_, lerr := h.leaseIn(mgrNS, key)
		return apierrors.IsNotFound(ferr) && apierrors.IsNotFound(lerr), fmt.Sprintf("feed: %v, lease: %v", ferr, lerr)
	})
}
