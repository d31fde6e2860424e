package pumppod_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// A stolen operator token is no path to every Secret. The chart's RBAC and
// admission policies, as rendered in both RBAC modes, applied to a real API
// server; then, as the operator's ServiceAccount (impersonated), every
// write that would give it or a ServiceAccount it controls the Secrets of a
// namespace holding no FlightFeed — a ClusterRoleBinding of any kind, a
// RoleBinding of the secret reader there (new, or an existing one changed),
// a Role on Secrets, a pod of its own mounting them — is tried and must be
// refused; in a namespace holding a FlightFeed it may bind the secret reader
// to itself (how it grants a pump its Secrets) and run a pump Deployment,
// but not bind the secret reader or a Role to anyone else, nor run a pod as
// another ServiceAccount of that namespace or with the node's namespaces,
// paths or privileges. `kubectl auth can-i` as the operator says no to
// Secrets where no FlightFeed is, to creating ClusterRoleBindings and to
// creating FlightFeeds, afterwards.
func TestOperatorTokenReachesNoSecretOutsideFeedNamespaces(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed (apt-get install -y kubectl, or the cluster's build in hack/cluster): %v", err)
	}
	for _, namespaced := range []bool{false, true} {
		name := "cluster-wide"
		if namespaced {
			name = "namespaced"
		}
		t.Run(name, func(t *testing.T) { secretPaths(t, kubectl, namespaced) })
	}
}

func secretPaths(t *testing.T, kubectl string, namespaced bool) {
	admin := kubetest.Client(t, restCfg)
	ctx := t.Context()
	suffix := strings.ToLower(utilrand.String(6))
	opNS, feedNS, otherNS := "sp-sys-"+suffix, "sp-feed-"+suffix, "sp-other-"+suffix
	for _, ns := range []string{opNS, feedNS, otherNS} {
		mustCreate(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	for _, ns := range []string{feedNS, otherNS} {
		mustCreate(t, admin, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"dsn": "secret"}})
	}
	var ff unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(strings.Replace(specManifest, "namespace: default", "namespace: "+feedNS, 1)), &ff.Object); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, admin, &ff)
	// A ServiceAccount of the feed's namespace with more rights than the
	// operator's (a deploy pipeline's, say): Secrets everywhere.
	mustCreate(t, admin, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: feedNS}})

	release := "sp" + suffix
	full := release + "-flightfeed"
	reader := full + "-secret-reader"
	args := []string{"--set", "crds.enabled=false"}
	if namespaced {
		// The namespace without a FlightFeed is watched too: its Role lets
		// the operator write there, the policy must not.
		args = append(args, "--set", "watchNamespaces={"+feedNS+","+otherNS+"}")
	}
	var sa string
	var policies []string
	for _, o := range renderChart(t, release, opNS, args...) {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
			continue
		case "ValidatingAdmissionPolicy":
			policies = append(policies, o.GetName())
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ValidatingAdmissionPolicyBinding":
		default:
			continue
		}
		mustCreate(t, admin, o)
		if o.GetNamespace() == "" {
			t.Cleanup(func() { _ = admin.Delete(context.Background(), o) })
		}
	}
	// Secrets everywhere for the deployer (cleaned up with the release's).
	deployerCRB := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: release + "-deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: feedNS, Name: "deployer"}}}
	mustCreate(t, admin, deployerCRB)
	t.Cleanup(func() { _ = admin.Delete(context.Background(), deployerCRB) })
	opUser := "system:serviceaccount:" + opNS + ":" + sa
	_, asOp := impersonate(t, client.Options{Scheme: admin.Scheme()}, opNS, sa)

	// The policies take effect a moment after they are made: wait until
	// each refuses a write of its kind (a dry run, which admission sees).
	if len(policies) != 4 {
		t.Errorf("the chart renders the admission policies %v, want the operator's labels, namespaces, rolebindings and pods", policies)
	}
	for _, p := range []struct {
		policy string
		obj    client.Object
	}{
		{"operator-labels", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: feedNS}}},
		{"operator-namespaces", ours(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: otherNS}})},
		{"operator-rolebindings", ours(roleBinding(feedNS, "probe", "ClusterRole", reader, serviceAccount(feedNS, "pek-pump")))},
		{"operator-pods", ours(pumpDeployment(feedNS, "probe-pump", func(p *corev1.PodSpec) { p.HostNetwork = true }))},
	} {
		if len(policies) == 0 {
			break // the old chart: try the writes below all the same
		}
		awaitPolicy(ctx, t, asOp, p.policy, p.obj)
	}
	// Nobody else is held: an administrator writes where no FlightFeed is.
	mustCreate(t, admin, roleBinding(otherNS, "admins-own", "ClusterRole", reader, serviceAccount(otherNS, "default")))
	mustCreate(t, admin, pumpDeployment(otherNS, "web", func(p *corev1.PodSpec) { p.ServiceAccountName = "default"; p.HostNetwork = true }))

	refused := func(what string, obj client.Object, update bool) {
		t.Helper()
		var err error
		if update {
			err = asOp.Update(ctx, obj)
		} else {
			err = asOp.Create(ctx, obj)
		}
		switch {
		case err == nil:
			t.Errorf("as the operator, %s: allowed, want refused", what)
			if !update {
				_ = admin.Delete(context.Background(), obj)
			}
		case !refusal(err):
			t.Errorf("as the operator, %s: %v, want refused by RBAC or an admission policy", what, err)
		default:
			t.Logf("refused: %s: %v", what, err)
		}
	}
	allowed := func(what string, obj client.Object) {
		t.Helper()
		await.Eventually(t, "as the operator, "+what, waitLong, func() (bool, string) {
			err := asOp.Create(ctx, obj.DeepCopyObject().(client.Object))
			return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
		})
	}

	// No ClusterRoleBinding at all: not to the secret reader, not to the
	// one ClusterRole it may bind cluster-wide.
	refused("a ClusterRoleBinding of the secret reader to itself",
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: release + "-steal"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader}, Subjects: []rbacv1.Subject{serviceAccount(opNS, sa)}}, false)
	refused("a ClusterRoleBinding of system:auth-delegator",
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: release + "-delegate"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}, Subjects: []rbacv1.Subject{serviceAccount(opNS, sa)}}, false)
	refused("a FlightFeed in a namespace without one", func() client.Object { o := ff.DeepCopy(); o.SetNamespace(otherNS); o.SetResourceVersion(""); return o }(), false)

	// The namespace without a FlightFeed: nothing of its own there,
	// labelled as the operator's or not.
	refused("a RoleBinding of the secret reader to itself where no FlightFeed is",
		ours(roleBinding(otherNS, reader, "ClusterRole", reader, serviceAccount(opNS, sa))), false)
	refused("an unlabelled RoleBinding of the secret reader to itself where no FlightFeed is",
		roleBinding(otherNS, reader, "ClusterRole", reader, serviceAccount(opNS, sa)), false)
	refused("a RoleBinding of the secret reader to a feed's pump where no FlightFeed is",
		ours(roleBinding(otherNS, "pump-reads", "ClusterRole", reader, serviceAccount(feedNS, "pek-pump"))), false)
	refused("a Role on Secrets where no FlightFeed is", ours(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "steal", Namespace: otherNS},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}), false)
	refused("a ServiceAccount where no FlightFeed is", ours(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pek-pump", Namespace: otherNS}}), false)
	refused("a Deployment mounting a Secret where no FlightFeed is", ours(pumpDeployment(otherNS, "pek-pump", func(p *corev1.PodSpec) {
		p.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
	})), false)
	// An existing binding of the secret reader there (to someone else),
	// given the operator as a subject, labelled or not.
	existing := roleBinding(otherNS, "auditors", "ClusterRole", reader, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "auditor"})
	mustCreate(t, admin, existing)
	existing.Subjects = append(existing.Subjects, serviceAccount(opNS, sa))
	refused("adding itself to a RoleBinding of the secret reader where no FlightFeed is", existing.DeepCopy(), true)
	refused("adding itself to a RoleBinding of the secret reader where no FlightFeed is, labelled as its own", ours(existing.DeepCopy()), true)

	// The feed's namespace: its own binding and the pump's objects, and
	// nothing that hands Secrets or another ServiceAccount's rights on.
	allowed("its own RoleBinding of the secret reader in a feed's namespace", ours(roleBinding(feedNS, reader, "ClusterRole", reader, serviceAccount(opNS, sa))))
	allowed("a pump's ServiceAccount", ours(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "pek-pump", Namespace: feedNS}}))
	allowed("a pump's Role on a named Secret", ours(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pek-pump", Namespace: feedNS},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"db"}}}}))
	allowed("a pump's RoleBinding", ours(roleBinding(feedNS, "pek-pump", "Role", "pek-pump", serviceAccount(feedNS, "pek-pump"))))
	allowed("a pump's Deployment", ours(pumpDeployment(feedNS, "pek-pump", nil)))
	refused("a RoleBinding of the secret reader to a pump", ours(roleBinding(feedNS, "pump-reads", "ClusterRole", reader, serviceAccount(feedNS, "pek-pump"))), false)
	refused("a RoleBinding of the secret reader to itself and a ServiceAccount of another namespace",
		ours(roleBinding(feedNS, "also", "ClusterRole", reader, serviceAccount(opNS, sa), serviceAccount(otherNS, "default"))), false)
	refused("a RoleBinding of the secret reader to every ServiceAccount",
		ours(roleBinding(feedNS, "all", "ClusterRole", reader, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"})), false)
	refused("a RoleBinding of a Role to a ServiceAccount of another namespace",
		ours(roleBinding(feedNS, "pek-pump-too", "Role", "pek-pump", serviceAccount(otherNS, "default"))), false)
	refused("a Deployment whose pods run as another ServiceAccount", ours(pumpDeployment(feedNS, "pvg-pump", func(p *corev1.PodSpec) { p.ServiceAccountName = "deployer" })), false)
	refused("a Deployment named after another ServiceAccount", ours(pumpDeployment(feedNS, "deployer", nil)), false)
	refused("a Deployment with a hostPath volume", ours(pumpDeployment(feedNS, "pvg-pump", func(p *corev1.PodSpec) {
		p.Volumes = []corev1.Volume{{Name: "node", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet"}}}}
	})), false)
	refused("a Deployment of privileged pods", ours(pumpDeployment(feedNS, "pvg-pump", func(p *corev1.PodSpec) {
		p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})), false)
	refused("a Deployment on the node's PID namespace", ours(pumpDeployment(feedNS, "pvg-pump", func(p *corev1.PodSpec) { p.HostPID = true })), false)

	// What RBAC says now, as kubectl asks it (SelfSubjectAccessReview as
	// the operator): no Secret where no FlightFeed is, no
	// ClusterRoleBinding, no FlightFeed of its own making.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubetest.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	canI := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "auth", "can-i", "--as", opUser}, args...)...)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
			t.Fatalf("kubectl auth can-i %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, q := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "secrets", "-n", otherNS}, "no"},
		{[]string{"get", "secrets/db", "-n", otherNS}, "no"},
		{[]string{"list", "secrets", "-n", otherNS}, "no"},
		{[]string{"get", "secrets", "-n", "kube-system"}, "no"},
		{[]string{"get", "secrets", "--all-namespaces"}, "no"},
		{[]string{"create", "clusterrolebindings"}, "no"},
		{[]string{"escalate", "clusterroles"}, "no"},
		{[]string{"create", "flightfeeds.flightfeed.aero", "-n", otherNS}, "no"},
		{[]string{"create", "flightfeeds.flightfeed.aero", "--all-namespaces"}, "no"},
		// Where a FlightFeed is, by its own binding: how it grants a pump
		// the Secrets its feed names.
		{[]string{"get", "secrets", "-n", feedNS}, "yes"},
	} {
		if got := canI(q.args...); got != q.want {
			t.Errorf("kubectl auth can-i %s --as %s: %s, want %s", strings.Join(q.args, " "), opUser, got, q.want)
		}
	}
	mustForbid(t, asOp, "the operator", otherNS, "db")
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

// refusal tells whether err is RBAC's or an admission policy's no. A
// policy whose parameter is not found refuses as Invalid (422), its
// validations as the reason they give (Forbidden).
// awaitPolicy waits until the admission policy named policy refuses
// the write of obj by c (a dry run, which admission sees): a policy takes
// effect a moment after it is made, once the API server has loaded it.
func awaitPolicy(ctx context.Context, t *testing.T, c client.Client, policy string, obj client.Object) {
	t.Helper()
	await.Eventually(t, "the policy "+policy+" in effect", waitLong, func() (bool, string) {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
		return refusal(err) && strings.Contains(err.Error(), policy), fmt.Sprint(err)
	})
}

func refusal(err error) bool {
	return apierrors.IsForbidden(err) || (apierrors.IsInvalid(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"))
}

// ours labels obj as the operator labels its objects (its cache selects
// them so; the admission policies hold that label to feed namespaces).
func ours[T client.Object](obj T) T {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[feednames.LabelManagedBy] = feednames.ManagedBy
	obj.SetLabels(l)
	return obj
}

func serviceAccount(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func roleBinding(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: subjects}
}

// pumpDeployment is a Deployment shaped like the operator's pump (its
// pods run as the ServiceAccount of its name), edit changing its pods.
func pumpDeployment(ns, name string, edit func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			ServiceAccountName: name,
			Containers:         []corev1.Container{{Name: "pump", Image: "flightfeed:test"}},
		}},
	}}
	if edit != nil {
		edit(&d.Spec.Template.Spec)
	}
	return d
}
