package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/loopback"
)

const waitLong = 30 * time.Second

// env is one test's namespace, with the operator running on it.
type env struct {
	t  *testing.T
	c  client.Client
	ns string
}

func newEnv(t *testing.T, edit func(*operator.Options)) *env {
	t.Helper()
	e := newNamespace(t)
	t.Cleanup(e.start(edit))
	return e
}

// newNamespace is an env with no operator running yet (see start).
func newNamespace(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, c: kubetest.Client(t, restCfg), ns: "op-" + strings.ToLower(utilrand.String(8))}
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	return e
}

// start runs an operator on the env's namespace until the returned stop.
func (e *env) start(edit func(*operator.Options)) (stop func()) {
	t := e.t
	t.Helper()
	o := operator.Options{RestConfig: restCfg, MetricsAddr: "0", ProbeAddr: loopback.FreeAddr(t),
		Namespaces: []string{e.ns}, Namespace: e.ns + "-sys",
		Pump: feedobjects.PumpDefaults{Image: "flightfeed:test", Args: []string{"--zap-log-level=info"}},
		Log:  ctrl.Log.WithName("operator")}
	if edit != nil {
		edit(&o)
	}
	mgr, err := operator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator: %v", err)
			}
		})
	}
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(e.t.Context(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func (e *env) feed(name string, edit func(*v1alpha1.FlightFeed)) *v1alpha1.FlightFeed {
	e.t.Helper()
	ff := &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: v1alpha1.FlightFeedSpec{
		Airport:  v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
		Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-mailbox", Key: "dsn"}},
		Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-db", Key: "dsn"}},
		Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"127.0.0.1:9092"}},
	}}
	if edit != nil {
		edit(ff)
	}
	e.create(ff)
	return ff
}

func (e *env) get(key types.NamespacedName, obj client.Object) error {
	return e.c.Get(e.t.Context(), key, obj)
}

// The operator turns a FlightFeed into the pump's objects in the feed's
// namespace, owned by the feed, and reports the Deployment's pods; a spec
// change rolls the pods; replicas 1 drops the budget; the finalizer of the
// release that ran pumps inside the operator goes; the operator never
// reads a Secret (none exists here, and nothing waits for one).
func TestFeedBecomesItsPumpObjects(t *testing.T) {
	e := newEnv(t, nil)
	ff := e.feed("pek", func(ff *v1alpha1.FlightFeed) { ff.Finalizers = []string{v1alpha1.Finalizer} })
	key := client.ObjectKeyFromObject(ff)
	pk := types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}

	var dep appsv1.Deployment
	await.Eventually(t, "the pump Deployment", waitLong, func() (bool, string) {
		err := e.get(pk, &dep)
		return err == nil, fmt.Sprint(err)
	})
	if !slices.Equal(dep.Spec.Template.Spec.Containers[0].Args[:3], []string{"pump", "--feed", e.ns + "/pek"}) || *dep.Spec.Replicas != 2 {
		t.Fatalf("deployment args %q replicas %d", dep.Spec.Template.Spec.Containers[0].Args, *dep.Spec.Replicas)
	}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		if err := e.get(pk, obj); err != nil {
			t.Fatalf("%T: %v", obj, err)
		}
		if refs := obj.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != ff.UID {
			t.Fatalf("%T owners %+v", obj, refs)
		}
	}
	var lease coordinationv1.Lease
	if err := e.get(types.NamespacedName{Namespace: e.ns, Name: feednames.Lease(key)}, &lease); err != nil || lease.OwnerReferences[0].UID != ff.UID {
		t.Fatalf("lease %+v: %v", lease.ObjectMeta, err)
	}
	await.Eventually(t, "status.pumpPods and no finalizer", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		if err := e.get(key, &got); err != nil {
			return false, err.Error()
		}
		p := got.Status.PumpPods
		return p != nil && p.Ready == "0/2" && p.ObservedGeneration == got.Generation && len(got.Finalizers) == 0,
			fmt.Sprintf("%+v, finalizers %v", p, got.Finalizers)
	})

	// envtest runs no controller-manager: play the Deployment controller's
	// part, and the pods run the generation.
	// The operator writes too (the status, the Deployment): re-read on a
	// conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.get(pk, &dep); err != nil {
			return err
		}
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
		return e.c.Status().Update(t.Context(), &dep)
	}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the pods' generation", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(key, &got)
		p := got.Status.PumpPods
		return p != nil && p.Generation == got.Generation && p.Ready == "2/2", fmt.Sprintf("%+v", p)
	})

	// A spec change: a new template (the pods roll), one replica, no budget.
	var cur v1alpha1.FlightFeed
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.get(key, &cur); err != nil {
			return err
		}
		cur.Spec.Pump.Replicas = ptr.To(int32(1))
		return e.c.Update(t.Context(), &cur)
	}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the new template and no budget", waitLong, func() (bool, string) {
		var d appsv1.Deployment
		_ = e.get(pk, &d)
		err := e.get(pk, &policyv1.PodDisruptionBudget{})
		return d.Spec.Template.Annotations[feedobjects.AnnotationGeneration] == fmt.Sprint(cur.Generation) &&
				*d.Spec.Replicas == 1 && apierrors.IsNotFound(err),
			fmt.Sprintf("template %v replicas %d budget %v", d.Spec.Template.Annotations, *d.Spec.Replicas, err)
	})

	// An object the operator owns is put back when removed.
	if err := e.c.Delete(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: pk.Name, Namespace: e.ns}}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "the Service back", waitLong, func() (bool, string) {
		var s corev1.Service
		err := e.get(pk, &s)
		return err == nil && s.DeletionTimestamp.IsZero(), fmt.Sprint(err)
	})
}

// While a pump of the release that ran inside the operator holds the
// feed's Lease in the operator's namespace, the operator makes no pump
// Deployment and says why; once that Lease lapses, it does.
func TestPumpPodsWaitForThePreviousReleasesPump(t *testing.T) {
	var sys string
	e := newEnv(t, func(o *operator.Options) { sys = o.Namespace })
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sys}})
	key := types.NamespacedName{Namespace: e.ns, Name: "pek"}
	now := metav1.NewMicroTime(time.Now())
	old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: feednames.Lease(key), Namespace: sys},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("flightfeed-7d9c-abcde"), LeaseDurationSeconds: ptr.To(int32(4)),
			AcquireTime: &now, RenewTime: &now}}
	e.create(old)
	e.feed("pek", nil)

	await.Eventually(t, "status.pumpPods.waiting", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(key, &got)
		p := got.Status.PumpPods
		return p != nil && strings.Contains(p.Waiting, "flightfeed-7d9c-abcde"), fmt.Sprintf("%+v", p)
	})
	pk := types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}
	if err := e.get(pk, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a pump Deployment while the previous release's pump holds the Lease: %v", err)
	}
	// The old pump stops renewing (its replica was replaced): after the
	// Lease's four seconds the pods are made.
	await.Eventually(t, "the pump Deployment", waitLong, func() (bool, string) {
		err := e.get(pk, &appsv1.Deployment{})
		return err == nil, fmt.Sprint(err)
	})
	await.Eventually(t, "waiting cleared", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(key, &got)
		p := got.Status.PumpPods
		return p != nil && p.Waiting == "", fmt.Sprintf("%+v", p)
	})
}

// The pumps' auth-delegator binding, made by the install with no subjects
// (and Helm's labels), names every feed's pump ServiceAccount and drops a
// feed's once it is gone, its labels kept; the operator's Secret grant
// binds it in the feed's namespace, owned by the feed.
func TestBindingsFollowTheFeeds(t *testing.T) {
	crb := "ff-pumps-" + strings.ToLower(utilrand.String(6))
	e := newNamespace(t)
	installed := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crb, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"}}
	e.create(installed)
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), installed) })
	var sa types.NamespacedName
	t.Cleanup(e.start(func(o *operator.Options) {
		o.AuthDelegator = crb
		sa = types.NamespacedName{Namespace: o.Namespace, Name: "flightfeed"}
		o.SecretGrant = &controllers.SecretGrant{ClusterRole: "ff-secret-reader", ServiceAccount: sa, BindingName: "ff-secret-reader"}
	}))
	a := e.feed("pek", nil)
	e.feed("can", nil)
	subjects := func() []string {
		var b rbacv1.ClusterRoleBinding
		if err := e.get(types.NamespacedName{Name: crb}, &b); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, s := range b.Subjects {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	await.Eventually(t, "both pumps bound", waitLong, func() (bool, string) {
		got := subjects()
		return slices.Equal(got, []string{e.ns + "/can-pump", e.ns + "/pek-pump"}), fmt.Sprint(got)
	})
	var grant rbacv1.RoleBinding
	if err := e.get(types.NamespacedName{Namespace: e.ns, Name: "ff-secret-reader"}, &grant); err != nil {
		t.Fatal(err)
	}
	if grant.RoleRef.Name != "ff-secret-reader" || grant.Subjects[0].Name != sa.Name || grant.Subjects[0].Namespace != sa.Namespace || len(grant.OwnerReferences) != 2 {
		t.Fatalf("grant %+v", grant)
	}
	if err := e.c.Delete(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, "pek's pump unbound", waitLong, func() (bool, string) {
		got := subjects()
		return slices.Equal(got, []string{e.ns + "/can-pump"}), fmt.Sprint(got)
	})
	var b rbacv1.ClusterRoleBinding
	if err := e.get(types.NamespacedName{Name: crb}, &b); err != nil {
		t.Fatal(err)
	}
	if b.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the install's labels of %s are gone: %v", crb, b.Labels)
	}
}

// The operator creates no ClusterRoleBinding (one it made could bind any
// ClusterRole it may bind to anyone, cluster-wide): without the install's
// auth-delegator binding, the feed's pump objects are made all the same
// and the binding stays missing.
func TestNoAuthDelegatorBindingIsMade(t *testing.T) {
	crb := "ff-pumps-" + strings.ToLower(utilrand.String(6))
	e := newEnv(t, func(o *operator.Options) { o.AuthDelegator = crb })
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crb}})
	})
	ff := e.feed("pek", nil)
	// status.pumpPods is written before the binding's subjects (releases
	// that made the binding made it before).
	await.Eventually(t, "the pump Deployment in status.pumpPods", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(client.ObjectKeyFromObject(ff), &got)
		p := got.Status.PumpPods
		return p != nil && p.Deployment == "pek-pump" && p.Ready == "0/2", fmt.Sprintf("%+v", p)
	})
	if err := e.get(types.NamespacedName{Name: crb}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRoleBinding %s: %v, want none made", crb, err)
	}
}

// Without the chart's leave (pump.allowPlacementFromSpec), the spec's
// placement is not rendered, and status.pumpPods.adjusted says so; the
// spec's resources are clamped to the bounds and said there too.
func TestIgnoredPlacementIsReported(t *testing.T) {
	e := newEnv(t, func(o *operator.Options) {
		o.Pump.ResourceBounds.MaxMemory = ptr.To(resource.MustParse("1Gi"))
	})
	ff := e.feed("pek", func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Pump.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}}
		ff.Spec.Pump.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi")}}
	})
	await.Eventually(t, "status.pumpPods.adjusted", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(client.ObjectKeyFromObject(ff), &got)
		p := got.Status.PumpPods
		return p != nil && len(p.Adjusted) == 2 && strings.HasPrefix(p.Adjusted[0], "spec.pump.resources.limits.memory 64Gi is above the chart's maximum 1Gi") &&
			strings.HasPrefix(p.Adjusted[1], "spec.pump.tolerations is ignored"), fmt.Sprintf("%+v", p)
	})
	var dep appsv1.Deployment
	if err := e.get(types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}, &dep); err != nil {
		t.Fatal(err)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Tolerations) != 0 || pod.Containers[0].Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("tolerations %v limits %v", pod.Tolerations, pod.Containers[0].Resources.Limits)
	}
}

// A value of the pods' placement that the API server refuses in the
// Deployment (the CRD takes Kubernetes' own types as they are) is said in
// status.pumpPods.waiting, and no Deployment is made.
func TestRefusedPlacementIsReported(t *testing.T) {
	e := newEnv(t, func(o *operator.Options) { o.Pump.AllowPlacementFromSpec = true })
	ff := e.feed("pek", func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Pump.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: "Sometimes"}}
	})
	await.Eventually(t, "the refusal in status.pumpPods.waiting", waitLong, func() (bool, string) {
		var got v1alpha1.FlightFeed
		_ = e.get(client.ObjectKeyFromObject(ff), &got)
		p := got.Status.PumpPods
		return p != nil && strings.Contains(p.Waiting, "Deployment") && strings.Contains(p.Waiting, "Sometimes"), fmt.Sprintf("%+v", p)
	})
	if err := e.get(types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a Deployment with a refused toleration: %v", err)
	}
}
