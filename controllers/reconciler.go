package controllers

import (
	"context"
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
	"github.com/flightfeed/flightfeed/internal/feedobjects"
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
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update;watch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;create;update;delete
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
	Defaults feedobjects.PumpDefaults
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
	// ScrapeTokens, when set, is how the feeds' ServiceMonitors get their
	// bearer tokens (see ScrapeTokens). Nil: no ServiceMonitor that needs
	// one is written.
	ScrapeTokens *ScrapeTokens
	// Clock judges Lease expiry and token renewal (default: real).
	Clock clock.PassiveClock

	apiServer apiServerCache
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
	d, err := r.Defaults.WithDefaults()
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.grantSecrets(ctx, &ff); err != nil {
		return ctrl.Result{}, err
	}
	env, err := r.renderEnv(ctx, &ff, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	objs := feedobjects.Render(&ff, d, env)
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
	var result ctrl.Result
	if d.NetworkPolicy != nil {
		// The DSNs' hosts are read again, as the pump pods read them.
		result.RequeueAfter = DependencyResync
	}
	switch {
	case objs.ScrapeToken:
		renewAt, err := r.keepScrapeToken(ctx, &ff)
		if err != nil {
			return ctrl.Result{}, err
		}
		if wait := max(renewAt.Sub(r.now()), time.Second); result.RequeueAfter == 0 || wait < result.RequeueAfter {
			result.RequeueAfter = wait
		}
	case r.ScrapeTokens != nil:
		if err := r.dropScrapeToken(ctx, &ff); err != nil {
			return ctrl.Result{}, err
		}
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
	return result, r.syncAuthDelegator(ctx)
}

func (r *FlightFeedReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// renderEnv finds what the rendering needs beyond the feed and the
// defaults: whether scraper tokens can be made, and, for the
// NetworkPolicy, the feed's DSN hosts and the API server's addresses.
func (r *FlightFeedReconciler) renderEnv(ctx context.Context, ff *v1alpha1.FlightFeed, d feedobjects.PumpDefaults) (feedobjects.Env, error) {
	env := feedobjects.Env{ScrapeTokens: r.ScrapeTokens != nil && r.ScrapeTokens.Mint != nil}
	np := d.NetworkPolicy
	if np == nil {
		return env, nil
	}
	var err error
	if env.Mailbox, env.Database, err = r.dependencyAddresses(ctx, ff); err != nil {
		return env, err
	}
	if np.APIServer != nil && len(np.APIServer.Ports) > 0 && len(np.APIServer.CIDRs) == 0 {
		addrs, fresh, err := r.apiServerAddresses(ctx)
		if err != nil && fresh {
			logf.FromContext(ctx).Info("the API server's addresses are unknown: the pump pods' NetworkPolicy opens its ports to any address (list them in networkPolicy.egress.apiServer.cidrs)",
				"error", err.Error())
		}
		env.APIServer = addrs
	}
	return env, nil
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
// feed's namespace, and to the scrape token writer's when the feeds'
// ServiceMonitors get tokens, with this feed among each binding's owners
// (so the binding goes with the last FlightFeed of the namespace).
func (r *FlightFeedReconciler) grantSecrets(ctx context.Context, ff *v1alpha1.FlightFeed) error {
	if err := r.bindSelf(ctx, ff, r.SecretGrant); err != nil {
		return err
	}
	if r.ScrapeTokens != nil {
		return r.bindSelf(ctx, ff, r.ScrapeTokens.Writer)
	}
	return nil
}

func (r *FlightFeedReconciler) bindSelf(ctx context.Context, ff *v1alpha1.FlightFeed, g *SecretGrant) error {
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
		addOwner(rb, ff)
		return nil
	})
	if err != nil {
		return fmt.Errorf("bind the operator to %s in %s: %w", g.ClusterRole, ff.Namespace, err)
	}
	return nil
}

// addOwner puts ff among obj's owners (not as its controller: a
// namespace's object is shared by its feeds).
func addOwner(obj client.Object, ff *v1alpha1.FlightFeed) {
	if ownedBy(obj, ff.UID) {
		return
	}
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(),
		metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlightFeed", Name: ff.Name, UID: ff.UID}))
}

// apply creates or updates every object of the feed's pump, and removes
// the PodDisruptionBudget and NetworkPolicy when they are not wanted.
func (r *FlightFeedReconciler) apply(ctx context.Context, ff *v1alpha1.FlightFeed, o feedobjects.Objects) error {
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
			feedobjects.SetTemplate(dep, o.Deployment.Spec.Template)
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
	unstructuredStep := func(u *unstructured.Unstructured) {
		if u == nil {
			return
		}
		steps = append(steps, struct {
			obj    client.Object
			mutate func(existing client.Object)
		}{u.DeepCopy(), func(e client.Object) {
			e.(*unstructured.Unstructured).Object["spec"] = u.DeepCopy().Object["spec"]
		}})
	}
	unstructuredStep(o.Certificate)
	if o.NetworkPolicy != nil {
		steps = append(steps, struct {
			obj    client.Object
			mutate func(existing client.Object)
		}{&networkingv1.NetworkPolicy{ObjectMeta: o.NetworkPolicy.ObjectMeta}, func(e client.Object) {
			e.(*networkingv1.NetworkPolicy).Spec = o.NetworkPolicy.Spec
		}})
	}
	// Last: the pods' own objects do not wait for the Prometheus Operator.
	unstructuredStep(o.ServiceMonitor)
	// The namespace's CA first: the feed's Certificate names its Issuer.
	if err := r.applyNamespaceCA(ctx, ff, o.NamespaceCA); err != nil {
		return err
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
			return applyError(ff, obj, err)
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
		err := r.deleteOwned(ctx, ff, feedobjects.CertManagerKey("Certificate", ff.Namespace, feednames.PumpTLS(ff.Name)))
		if err != nil && !meta.IsNoMatchError(err) {
			return err
		}
	}
	if o.ServiceMonitor == nil {
		// Turned off, or no longer safe to scrape: no ServiceMonitor
		// sends a token the pods cannot be trusted with. Without the
		// Prometheus Operator's CRDs there is none to delete.
		err := r.deleteOwned(ctx, ff, feedobjects.MonitoringKey("ServiceMonitor", ff.Namespace, feednames.Pump(ff.Name)))
		if err != nil && !meta.IsNoMatchError(err) {
			return err
		}
	}
	return nil
}

// applyError says which object could not be applied, and, when its kind
// is not served, what provides it.
func applyError(ff *v1alpha1.FlightFeed, obj client.Object, err error) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && meta.IsNoMatchError(err) {
		provider := "the pump certificates are issued by cert-manager: install it, or turn pump.certManager off"
		if u.GroupVersionKind().Group == feedobjects.MonitoringGroup {
			provider = "the feeds' ServiceMonitors need the Prometheus Operator's CRDs: install them, or turn monitoring.serviceMonitor off"
		}
		return fmt.Errorf("apply %s %s/%s: %w (%s)", u.GetKind(), ff.Namespace, obj.GetName(), err, provider)
	}
	return fmt.Errorf("apply %s %s/%s: %w", kindName(obj), ff.Namespace, obj.GetName(), err)
}

// applyNamespaceCA creates or updates the namespace's pump CA objects,
// with this feed among their owners (they go with the namespace's last
// FlightFeed), refusing objects of those names the operator did not make.
func (r *FlightFeedReconciler) applyNamespaceCA(ctx context.Context, ff *v1alpha1.FlightFeed, objs []*unstructured.Unstructured) error {
	for _, want := range objs {
		obj := want.DeepCopy()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
				created := obj.GetCreationTimestamp()
				if !created.IsZero() && obj.GetLabels()[feednames.LabelManagedBy] != feednames.ManagedBy {
					return fmt.Errorf("%s %s exists and is not the operator's: rename or remove it (each namespace's pump certificates are issued by the operator's CA of that name)",
						obj.GetKind(), obj.GetName())
				}
				obj.SetLabels(mergeLabels(obj.GetLabels(), map[string]string{feednames.LabelManagedBy: feednames.ManagedBy}))
				addOwner(obj, ff)
				obj.Object["spec"] = want.DeepCopy().Object["spec"]
				return nil
			})
			return err
		})
		if err != nil {
			return applyError(ff, obj, err)
		}
	}
	return nil
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
	subjects := feedobjects.AuthDelegatorSubjects(feeds.Items)
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
		want := feedobjects.PumpPodsStatus(&fresh, dep, waiting, adjusted)
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
