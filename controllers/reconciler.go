package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// RBAC of the operator (config/rbac/role.yaml is generated from these
// markers). It makes each feed's objects and writes status.pumpPods; it
// reads no Secret data itself. Creating the pump's Role, which may get the
// Secrets the feed names, needs that right in the feed's namespace: the
// operator binds itself there to one fixed ClusterRole (bind, never
// escalate), see FlightFeedReconciler.SecretGrant. RBAC cannot say "only
// in a namespace holding a FlightFeed": the install's admission policy
// does (charts/flightfeed/templates/admission-policy.yaml).
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeds/finalizers,verbs=update
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=flightfeed.aero,resources=flightfeeddays/status,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FieldOwner names the operator's writes.
const FieldOwner = "flightfeed-operator"

// FlightFeedReconciler makes and keeps each FlightFeed's pump objects and
// reports their pods in status.pumpPods.
type FlightFeedReconciler struct {
	// Client reads through the cache (FlightFeeds and the objects labelled
	// feednames.LabelManagedBy) and writes.
	Client client.Client
	// APIReader reads uncached: Leases, and a FlightFeed's status before
	// the write (the optimistic lock needs a fresh resourceVersion).
	APIReader client.Reader
	// Defaults complete every pump Deployment.
	Defaults PumpDefaults
	// OperatorNamespace is where releases that ran the pumps inside the
	// operator kept every feed's Lease. While a pump of such a release
	// holds a feed's Lease there, the feed's Deployment is not made (the
	// fencing epoch would stop two pumps committing anyway; this avoids the
	// fight). Empty: no such check.
	OperatorNamespace string
	// SecretGrant, when set, is how the operator may create a Role that
	// grants get on the Secrets a feed names: it binds its own
	// ServiceAccount, in each namespace that holds a FlightFeed, to a fixed
	// ClusterRole that grants get on Secrets (it holds bind on that
	// ClusterRole, not escalate). Empty: the operator already holds that
	// right (envtest, or a chart that grants it per namespace).
	SecretGrant *SecretGrant
	// AuthDelegator, when set, names the ClusterRoleBinding to
	// system:auth-delegator whose subjects the operator keeps equal to
	// every feed's pump ServiceAccount: the pumps authenticate read API and
	// metrics callers (TokenReview, SubjectAccessReview). The install makes
	// the binding; the operator never creates one.
	AuthDelegator string
	// Clock judges Lease expiry (default: real).
	Clock clock.PassiveClock
}

// SecretGrant is the operator's own binding to the Secret-reading
// ClusterRole, per namespace.
type SecretGrant struct {
	// ClusterRole grants get on Secrets.
	ClusterRole string
	// ServiceAccount is the operator's own, namespace/name.
	ServiceAccount types.NamespacedName
	// BindingName is the RoleBinding made in each feed namespace.
	BindingName string
}

// Reconcile brings one feed's pump objects in line with its FlightFeed.
func (r *FlightFeedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var ff v1alpha1.FlightFeed
	if err := r.Client.Get(ctx, req.NamespacedName, &ff); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get flightfeed: %w", err)
		}
		// Its objects are owned: the garbage collector removes them.
		return ctrl.Result{}, r.syncAuthDelegator(ctx)
	}
	if !ff.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if err := r.dropLegacyFinalizer(ctx, &ff); err != nil {
		return ctrl.Result{}, err
	}
	if wait, again, err := r.legacyPumpRunning(ctx, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	} else if wait != "" {
		log.Info("not starting the pump pods yet", "reason", wait)
		if err := r.writePumpPods(ctx, &ff, nil, wait, nil); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: again}, nil
	}
	d, err := r.Defaults.withDefaults()
	if err != nil {
		return ctrl.Result{}, err
	}
	objs := renderPumpObjects(&ff, d)
	if err := r.grantSecrets(ctx, &ff); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.apply(ctx, &ff, objs); err != nil {
		// Said where the user looks (a value the API server refuses in the
		// pods' resources or placement, an object of that name that is not
		// the feed's), then retried with backoff.
		var have *appsv1.Deployment
		var dep appsv1.Deployment
		if gerr := r.Client.Get(ctx, client.ObjectKeyFromObject(objs.Deployment), &dep); gerr == nil {
			have = &dep
		}
		if werr := r.writePumpPods(ctx, &ff, have, err.Error(), objs.Adjusted); werr != nil {
			log.Error(werr, "report the failed apply")
		}
		return ctrl.Result{}, err
	}
	var dep appsv1.Deployment
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(objs.Deployment), &dep); err != nil {
		return ctrl.Result{}, fmt.Errorf("get deployment %s: %w", objs.Deployment.Name, err)
	}
	if err := r.writePumpPods(ctx, &ff, &dep, "", objs.Adjusted); err != nil {
		return ctrl.Result{}, err
	}
	// Last: a binding the install lacks fails the reconcile (retried) but
	// does not hide the pods from status.pumpPods.
	return ctrl.Result{}, r.syncAuthDelegator(ctx)
}

// dropLegacyFinalizer removes the finalizer releases that ran the pumps
// inside the operator put on every FlightFeed: the pump pods are owned
// objects now, and deleting the feed deletes them.
func (r *FlightFeedReconciler) dropLegacyFinalizer(ctx context.Context, ff *v1alpha1.FlightFeed) error {
	if !controllerutil.ContainsFinalizer(ff, v1alpha1.Finalizer) {
		return nil
	}
	orig := ff.DeepCopy()
	controllerutil.RemoveFinalizer(ff, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, ff, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("remove the finalizer of the previous release: %w", err)
	}
	return nil
}

// legacyPumpRunning says why the feed's pods must wait: a pump of a
// release that ran inside the operator still holds the feed's Lease in the
// operator's namespace. It returns when to look again.
func (r *FlightFeedReconciler) legacyPumpRunning(ctx context.Context, key types.NamespacedName) (string, time.Duration, error) {
	if r.OperatorNamespace == "" || r.OperatorNamespace == key.Namespace {
		// Same namespace: the pods contend for that very Lease.
		return "", 0, nil
	}
	var lease coordinationv1.Lease
	lk := types.NamespacedName{Namespace: r.OperatorNamespace, Name: feednames.Lease(key)}
	if err := r.APIReader.Get(ctx, lk, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return "", 0, nil
		}
		return "", 0, fmt.Errorf("get the previous release's lease %s: %w", lk, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" || lease.Spec.RenewTime == nil {
		return "", 0, nil
	}
	clk := r.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	valid := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	left := lease.Spec.RenewTime.Add(valid).Sub(clk.Now())
	if left <= 0 {
		return "", 0, nil
	}
	return fmt.Sprintf("a pump of the previous release (%s) holds Lease %s; the pump pods start when it lets go",
		holder, lk), min(left+time.Second, 2*time.Second), nil
}

// grantSecrets binds the operator to the Secret-reading ClusterRole in the
// feed's namespace, with this feed among the binding's owners (so the
// binding goes with the last FlightFeed of the namespace).
func (r *FlightFeedReconciler) grantSecrets(ctx context.Context, ff *v1alpha1.FlightFeed) error {
	g := r.SecretGrant
	if g == nil {
		return nil
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: g.BindingName, Namespace: ff.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, rb, func() error {
		if rb.Labels == nil {
			rb.Labels = map[string]string{}
		}
		rb.Labels[feednames.LabelManagedBy] = feednames.ManagedBy
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: g.ClusterRole}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: g.ServiceAccount.Namespace, Name: g.ServiceAccount.Name}}
		ref := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlightFeed", Name: ff.Name, UID: ff.UID}
		if !slices.ContainsFunc(rb.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ff.UID }) {
			rb.OwnerReferences = append(rb.OwnerReferences, ref)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bind the operator to %s in %s: %w", g.ClusterRole, ff.Namespace, err)
	}
	return nil
}

// apply creates or updates every object of the feed's pump, and removes
// the PodDisruptionBudget and NetworkPolicy when they are not wanted.
func (r *FlightFeedReconciler) apply(ctx context.Context, ff *v1alpha1.FlightFeed, o pumpObjects) error {
	// The Lease first: a pod that starts finds it, and its Role (get and
	// update of that one Lease) needs nothing more.
	if err := r.ensureLease(ctx, o.Lease); err != nil {
		return err
	}
	steps := []struct {
		obj    client.Object
		mutate func(existing client.Object)
	}{
		{&corev1.ServiceAccount{ObjectMeta: o.ServiceAccount.ObjectMeta}, func(client.Object) {}},
		{&rbacv1.Role{ObjectMeta: o.Role.ObjectMeta}, func(e client.Object) { e.(*rbacv1.Role).Rules = o.Role.Rules }},
		{&rbacv1.RoleBinding{ObjectMeta: o.RoleBinding.ObjectMeta}, func(e client.Object) {
			rb := e.(*rbacv1.RoleBinding)
			rb.RoleRef, rb.Subjects = o.RoleBinding.RoleRef, o.RoleBinding.Subjects
		}},
		{&corev1.Service{ObjectMeta: o.Service.ObjectMeta}, func(e client.Object) {
			s := e.(*corev1.Service)
			s.Spec.Selector, s.Spec.Ports, s.Spec.Type = o.Service.Spec.Selector, o.Service.Spec.Ports, o.Service.Spec.Type
		}},
		{&appsv1.Deployment{ObjectMeta: o.Deployment.ObjectMeta}, func(e client.Object) {
			dep := e.(*appsv1.Deployment)
			if dep.CreationTimestamp.IsZero() {
				dep.Spec.Selector = o.Deployment.Spec.Selector // immutable once made
			}
			dep.Spec.Replicas, dep.Spec.Strategy = o.Deployment.Spec.Replicas, o.Deployment.Spec.Strategy
			dep.Spec.RevisionHistoryLimit = o.Deployment.Spec.RevisionHistoryLimit
			setTemplate(dep, o.Deployment.Spec.Template)
		}},
	}
	if o.PDB != nil {
		steps = append(steps, struct {
			obj    client.Object
			mutate func(existing client.Object)
		}{&policyv1.PodDisruptionBudget{ObjectMeta: o.PDB.ObjectMeta}, func(e client.Object) {
			p := e.(*policyv1.PodDisruptionBudget)
			p.Spec.MaxUnavailable, p.Spec.MinAvailable = o.PDB.Spec.MaxUnavailable, nil
			if p.CreationTimestamp.IsZero() {
				p.Spec.Selector = o.PDB.Spec.Selector
			}
		}})
	}
	if o.Certificate != nil {
		steps = append(steps, struct {
			obj    client.Object
			mutate func(existing client.Object)
		}{o.Certificate.DeepCopy(), func(e client.Object) {
			e.(*unstructured.Unstructured).Object["spec"] = o.Certificate.DeepCopy().Object["spec"]
		}})
	}
	if o.NetworkPolicy != nil {
		steps = append(steps, struct {
			obj    client.Object
			mutate func(existing client.Object)
		}{&networkingv1.NetworkPolicy{ObjectMeta: o.NetworkPolicy.ObjectMeta}, func(e client.Object) {
			e.(*networkingv1.NetworkPolicy).Spec = o.NetworkPolicy.Spec
		}})
	}
	for _, s := range steps {
		want := s.obj.DeepCopyObject().(client.Object)
		obj := s.obj
		_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			created := obj.GetCreationTimestamp()
			if !ownedBy(obj, ff.UID) && !created.IsZero() {
				return fmt.Errorf("%T %s exists and is not this FlightFeed's: rename or remove it", obj, obj.GetName())
			}
			obj.SetLabels(mergeLabels(obj.GetLabels(), want.GetLabels()))
			obj.SetOwnerReferences(want.GetOwnerReferences())
			s.mutate(obj)
			return nil
		})
		if err != nil {
			if _, ok := obj.(*unstructured.Unstructured); ok && meta.IsNoMatchError(err) {
				return fmt.Errorf("apply %s %s/%s: %w (the pump certificates are issued by cert-manager: install it, or turn pump.certManager off)",
					obj.GetObjectKind().GroupVersionKind().Kind, ff.Namespace, obj.GetName(), err)
			}
			return fmt.Errorf("apply %s %s/%s: %w", kindName(obj), ff.Namespace, obj.GetName(), err)
		}
	}
	if o.PDB == nil {
		if err := r.deleteOwned(ctx, ff, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: feednames.Pump(ff.Name), Namespace: ff.Namespace}}); err != nil {
			return err
		}
	}
	if o.NetworkPolicy == nil {
		if err := r.deleteOwned(ctx, ff, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: feednames.Pump(ff.Name), Namespace: ff.Namespace}}); err != nil {
			return err
		}
	}
	if o.Certificate == nil {
		// Turned off: the pods no longer mount it. Without cert-manager's
		// CRDs there is none to delete.
		err := r.deleteOwned(ctx, ff, certificateKey(ff.Namespace, feednames.PumpTLS(ff.Name)))
		if err != nil && !meta.IsNoMatchError(err) {
			return err
		}
	}
	return nil
}

// certificateKey is an empty cert-manager Certificate of that name, read
// and written unstructured (uncached: the operator keeps no informer on a
// kind that may not be installed).
func certificateKey(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(CertManagerGroup + "/" + CertManagerVersion)
	u.SetKind("Certificate")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// setTemplate puts the rendered pod template into dep unless dep already
// runs it. The API server fills defaults into a stored template
// (terminationMessagePath, protocols, probe thresholds, ...), so the
// rendering never equals it, and writing it back at every reconcile was a
// PUT per Deployment status change that changed nothing. dep runs the
// rendering when it was last written from the same rendering (the hash
// annotation: a field the rendering dropped changes the hash) and still
// holds every field the rendering sets (an edit of the pods' template by
// hand is put back).
func setTemplate(dep *appsv1.Deployment, want corev1.PodTemplateSpec) {
	hash := templateHash(want)
	if dep.Annotations[AnnotationTemplateHash] == hash && equality.Semantic.DeepDerivative(want, dep.Spec.Template) {
		return
	}
	dep.Spec.Template = want
	if dep.Annotations == nil {
		dep.Annotations = map[string]string{}
	}
	dep.Annotations[AnnotationTemplateHash] = hash
}

// templateHash is a digest of a rendered pod template (encoding/json
// writes map keys sorted: the same rendering, the same hash).
func templateHash(t corev1.PodTemplateSpec) string {
	b, err := json.Marshal(t)
	if err != nil {
		return "" // never equal to a stored hash: the template is written
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// kindName is the kind of a typed or unstructured object, for messages.
func kindName(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}

func ownedBy(obj client.Object, uid types.UID) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == uid })
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// deleteOwned deletes obj if it exists and is the feed's.
func (r *FlightFeedReconciler) deleteOwned(ctx context.Context, ff *v1alpha1.FlightFeed, obj client.Object) error {
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !ownedBy(obj, ff.UID) {
		return nil
	}
	if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// ensureLease makes the feed's Lease when it is missing; it never touches
// one that exists (the pumps hold it).
func (r *FlightFeedReconciler) ensureLease(ctx context.Context, lease *coordinationv1.Lease) error {
	var have coordinationv1.Lease
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(lease), &have)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get lease %s: %w", lease.Name, err)
	}
	if err := r.Client.Create(ctx, lease.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create lease %s: %w", lease.Name, err)
	}
	return nil
}

// syncAuthDelegator keeps the subjects of the AuthDelegator binding equal
// to the pump ServiceAccounts of every FlightFeed there is. The install
// makes that ClusterRoleBinding (the chart, config/rbac); the operator
// only reads it by name and patches its subjects: it may create no
// ClusterRoleBinding, so it cannot bind any ClusterRole cluster-wide.
func (r *FlightFeedReconciler) syncAuthDelegator(ctx context.Context) error {
	if r.AuthDelegator == "" {
		return nil
	}
	var feeds v1alpha1.FlightFeedList
	if err := r.Client.List(ctx, &feeds); err != nil {
		return fmt.Errorf("list flightfeeds: %w", err)
	}
	subjects := make([]rbacv1.Subject, 0, len(feeds.Items))
	for _, f := range feeds.Items {
		if f.DeletionTimestamp.IsZero() {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: f.Namespace, Name: feednames.Pump(f.Name)})
		}
	}
	slices.SortFunc(subjects, func(a, b rbacv1.Subject) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// Uncached: the operator may get this one binding, not list them.
		var crb rbacv1.ClusterRoleBinding
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: r.AuthDelegator}, &crb); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%w: the install makes it (the chart, or config/rbac), bound to system:auth-delegator with no subjects; "+
					"the operator only sets its subjects, and the pumps cannot authenticate read API and metrics callers until it exists", err)
			}
			return err
		}
		if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != "system:auth-delegator" {
			return fmt.Errorf("it binds %s %s, want ClusterRole system:auth-delegator", crb.RoleRef.Kind, crb.RoleRef.Name)
		}
		if equality.Semantic.DeepEqual(crb.Subjects, subjects) || (len(crb.Subjects) == 0 && len(subjects) == 0) {
			return nil
		}
		orig := crb.DeepCopy()
		crb.Subjects = subjects
		// The subjects alone, under the optimistic lock: the labels and
		// annotations stay the install's (Helm's ownership among them).
		return r.Client.Patch(ctx, &crb, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	})
	if err != nil {
		return fmt.Errorf("bind the pumps to system:auth-delegator (ClusterRoleBinding %s): %w", r.AuthDelegator, err)
	}
	return nil
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pumpPodsStatus is status.pumpPods for the Deployment dep (nil: not made
// yet, waiting says why) on top of the previous one.
func pumpPodsStatus(ff *v1alpha1.FlightFeed, dep *appsv1.Deployment, waiting string, adjusted []string) *v1alpha1.PumpPodsStatus {
	s := &v1alpha1.PumpPodsStatus{Deployment: feednames.Pump(ff.Name), Waiting: waiting, Adjusted: adjusted}
	if prev := ff.Status.PumpPods; prev != nil {
		s.Generation = prev.Generation
	}
	if dep == nil {
		s.Ready = "0/0"
		return s
	}
	want := ptr.Deref(dep.Spec.Replicas, 1)
	s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = want, dep.Status.ReadyReplicas, dep.Status.UpdatedReplicas
	s.Ready = fmt.Sprintf("%d/%d", dep.Status.ReadyReplicas, want)
	if gen, ok := templateGeneration(dep); ok {
		s.ObservedGeneration = gen
		// Rolled out: the controller saw this template, every pod runs it
		// and no pod of an older one is left.
		if dep.Status.ObservedGeneration >= dep.Generation && dep.Status.UpdatedReplicas == want &&
			dep.Status.Replicas == want && dep.Status.AvailableReplicas == want {
			s.Generation = gen
		}
	}
	return s
}

func templateGeneration(dep *appsv1.Deployment) (int64, bool) {
	v, ok := dep.Spec.Template.Annotations[AnnotationGeneration]
	if !ok {
		return 0, false
	}
	var gen int64
	if _, err := fmt.Sscan(v, &gen); err != nil {
		return 0, false
	}
	return gen, true
}

// writePumpPods writes status.pumpPods — the operator's one field of the
// status — read fresh and patched under an optimistic lock, only when it
// changed. The merge patch names pumpPods alone, so the leading pump's
// fields are never touched.
func (r *FlightFeedReconciler) writePumpPods(ctx context.Context, ff *v1alpha1.FlightFeed, dep *appsv1.Deployment, waiting string, adjusted []string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var fresh v1alpha1.FlightFeed
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ff), &fresh); err != nil {
			return err
		}
		if fresh.UID != ff.UID {
			return nil
		}
		want := pumpPodsStatus(&fresh, dep, waiting, adjusted)
		if equality.Semantic.DeepEqual(fresh.Status.PumpPods, want) {
			return nil
		}
		orig := fresh.DeepCopy()
		fresh.Status.PumpPods = want
		return r.Client.Status().Patch(ctx, &fresh, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write status.pumpPods of %s/%s: %w", ff.Namespace, ff.Name, err)
	}
	return nil
}

// feedChanged lets through what the reconciler acts on: a feed made or
// deleted, its spec (generation), labels or annotations. The pump pods
// write the status every few seconds and the reconciler reads none of it
// (status.pumpPods is its own): a status write is no reason to apply
// every object again.
var feedChanged = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// SetupWithManager watches FlightFeeds and the objects the operator owns
// (a changed or deleted Deployment, Service, ... is put back; the
// Deployment's status feeds status.pumpPods).
func (r *FlightFeedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("flightfeed").
		For(&v1alpha1.FlightFeed{}, builder.WithPredicates(feedChanged)).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4})
	if r.Defaults.NetworkPolicy != nil {
		b = b.Owns(&networkingv1.NetworkPolicy{})
	}
	return b.Complete(r)
}
