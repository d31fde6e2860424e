package feedobjects

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// AnnotationGeneration on a pump pod template is the FlightFeed generation
// it was rendered from: a spec change rolls the pods, and a completed
// rollout tells which generation the pods run.
const AnnotationGeneration = "flightfeed.aero/generation"

// Objects are the objects one feed's data plane runs in, as the operator
// wants them.
type Objects struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
	// PDB is nil with one replica (a budget of one pod would block every
	// node drain).
	PDB *policyv1.PodDisruptionBudget
	// NetworkPolicy is nil unless the defaults enable it.
	NetworkPolicy *networkingv1.NetworkPolicy
	// Lease is the feed's Lease, made empty here so that the pump pods
	// need only get and update it (RBAC cannot limit create to one name).
	Lease *coordinationv1.Lease
	// Certificate is nil unless the defaults turn cert-manager on: then
	// cert-manager fills the Secret the pods serve the read API and
	// metrics with, for the feed's Service names alone.
	Certificate *unstructured.Unstructured
	// NamespaceCA are the namespace's own pump CA objects (the self-signed
	// Issuer, the CA Certificate and the CA Issuer that signs Certificate),
	// shared by every feed of the namespace; nil unless Certificate comes
	// from them.
	NamespaceCA []*unstructured.Unstructured
	// ServiceMonitor is nil unless the defaults ask for one and it can be
	// scraped safely (see renderServiceMonitor).
	ServiceMonitor *unstructured.Unstructured
	// ScrapeToken says the ServiceMonitor sends a token of the scraper made
	// for this feed, from key <feed> of the namespace's
	// feednames.PumpScrapeTokens Secret, which the reconciler keeps.
	ScrapeToken bool
	// Adjusted says what of spec.pump was not rendered as written (a
	// resource clamped to the chart's bounds), for status.pumpPods.
	Adjusted []string
}

// Env is what the rendering needs beyond the FlightFeed and the
// defaults, found by the reconciler (this package reads nothing).
type Env struct {
	// ScrapeTokens: the operator can make the metrics scraper tokens for a
	// feed's audience (without it no HTTPS ServiceMonitor is written).
	ScrapeTokens bool
	// Mailbox and Database are the host:port the feed's DSNs connect to
	// (DependencyAddresses), read from its Secrets when the NetworkPolicy
	// is on.
	Mailbox, Database []string
	// APIServer are the API server's addresses (the kubernetes Service's
	// and its endpoints'), looked up when the defaults list none; nil:
	// unknown.
	APIServer []netip.Addr
}

// Render renders the objects of ff's pump from its spec, the operator's
// defaults (d has been through WithDefaults) and what the reconciler
// found (env). It is pure: same inputs, same objects.
func Render(ff *v1alpha1.FlightFeed, d PumpDefaults, env Env) Objects {
	name := feednames.Pump(ff.Name)
	key := types.NamespacedName{Namespace: ff.Namespace, Name: ff.Name}
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: ff.Namespace, Labels: objectLabels(ff.Name),
			OwnerReferences: []metav1.OwnerReference{controllerRef(ff)}}
	}
	replicas := ptr.Deref(ff.Spec.Pump.Replicas, v1alpha1.DefaultPumpReplicas)
	o := Objects{
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: meta(name)},
		Role:           &rbacv1.Role{ObjectMeta: meta(name), Rules: pumpRules(ff)},
		RoleBinding: &rbacv1.RoleBinding{ObjectMeta: meta(name),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ff.Namespace}}},
		Service: renderService(ff, d, meta(name)),
		Lease:   &coordinationv1.Lease{ObjectMeta: meta(feednames.Lease(key))},
	}
	o.Deployment, o.Adjusted = renderDeployment(ff, d, meta(name), replicas)
	if replicas > 1 {
		o.PDB = &policyv1.PodDisruptionBudget{ObjectMeta: meta(name), Spec: policyv1.PodDisruptionBudgetSpec{
			// One pod may go at a time: the leader or its standby, never both.
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: feednames.PodLabels(ff.Name)},
		}}
	}
	if d.NetworkPolicy != nil {
		var notes []string
		o.NetworkPolicy, notes = renderNetworkPolicy(ff, d, env, meta(name))
		o.Adjusted = append(o.Adjusted, notes...)
	}
	if d.Certificate != nil {
		o.Certificate = renderCertificate(key, *d.Certificate, meta(feednames.PumpTLS(ff.Name)))
		if d.Certificate.NamespaceCA() {
			o.NamespaceCA = renderNamespaceCA(ff.Namespace)
		}
	}
	o.ServiceMonitor = renderServiceMonitor(key, d, env, meta(name))
	o.ScrapeToken = o.ServiceMonitor != nil && !d.ServiceMonitor.PlainHTTP
	return o
}

// renderCertificate is the cert-manager Certificate of a feed's pump pods:
// its Service's names and nothing else (feednames.PumpDNSNames), a fresh
// ECDSA key at every renewal, into the Secret of the same name; issued by
// the namespace's own CA unless the defaults name an issuer.
func renderCertificate(feed types.NamespacedName, c PumpCertificate, meta metav1.ObjectMeta) *unstructured.Unstructured {
	u := CertManagerKey("Certificate", meta.Namespace, meta.Name)
	issuer := c.IssuerRef
	if c.NamespaceCA() {
		issuer = IssuerRef{Name: feednames.PumpCA, Kind: "Issuer", Group: CertManagerGroup}
	}
	u.Object["spec"] = map[string]any{
		"secretName": meta.Name,
		"dnsNames":   toAny(feednames.PumpDNSNames(feed, c.ClusterDomain)),
		"usages":     []any{"server auth", "digital signature"},
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		"issuerRef":  map[string]any{"name": issuer.Name, "kind": issuer.Kind, "group": issuer.Group},
	}
	u.SetLabels(meta.Labels)
	u.SetOwnerReferences(meta.OwnerReferences)
	return u
}

// caDuration is the namespace CA certificate's lifetime: cert-manager
// renews it a third before its end, keeping its key (rotationPolicy
// Never), so the pump certificates it signed stay valid across the
// renewal.
const caDuration = "87600h"

// renderNamespaceCA is the namespace's own pump CA: a self-signed Issuer
// that signs only the CA Certificate feednames.PumpCA (its Secret of the
// same name), and the CA Issuer of that name, which signs the pump
// certificates of the namespace's feeds. Owners and labels are the
// reconciler's (every FlightFeed of the namespace).
func renderNamespaceCA(namespace string) []*unstructured.Unstructured {
	self := CertManagerKey("Issuer", namespace, feednames.PumpCASelfSigned)
	self.Object["spec"] = map[string]any{"selfSigned": map[string]any{}}
	ca := CertManagerKey("Certificate", namespace, feednames.PumpCA)
	ca.Object["spec"] = map[string]any{
		"isCA":       true,
		"commonName": "flightfeed pump CA",
		// The namespace in the subject: a CA of one namespace is told
		// apart from another's (a common name is at most 64 bytes).
		"subject":    map[string]any{"organizationalUnits": []any{namespace}},
		"secretName": feednames.PumpCA,
		"duration":   caDuration,
		"usages":     []any{"cert sign", "crl sign", "digital signature"},
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Never"},
		"issuerRef":  map[string]any{"name": feednames.PumpCASelfSigned, "kind": "Issuer", "group": CertManagerGroup},
	}
	issuer := CertManagerKey("Issuer", namespace, feednames.PumpCA)
	issuer.Object["spec"] = map[string]any{"ca": map[string]any{"secretName": feednames.PumpCA}}
	return []*unstructured.Unstructured{self, ca, issuer}
}

// renderServiceMonitor is the ServiceMonitor of the feed's pump pods, in
// the feed's namespace: it selects that namespace only, the feed's Service
// by its labels and, before anything is scraped, by its name; over HTTPS
// it verifies the pods' certificate as the Service's DNS name against the
// CA that issued it (a Secret of the feed's namespace: a ServiceMonitor
// reads no other) and sends a token of the scraper made for this feed's
// audience alone. nil when the defaults ask for none, the pods serve no
// metrics, or — over HTTPS — the pods have no certificate a client can
// verify (no cert-manager) or the operator makes no scraper tokens: no
// token goes to an endpoint that cannot prove it is the feed's.
func renderServiceMonitor(feed types.NamespacedName, d PumpDefaults, env Env, meta metav1.ObjectMeta) *unstructured.Unstructured {
	m := d.ServiceMonitor
	if m == nil || d.Ports.Metrics <= 0 {
		return nil
	}
	svc := feednames.Pump(feed.Name)
	endpoint := map[string]any{
		"port":     "metrics",
		"path":     "/metrics",
		"interval": m.Interval,
		// The selector's labels can be put on any Service of the
		// namespace: the feed's own is kept by its name.
		"relabelings": []any{map[string]any{"action": "keep", "sourceLabels": []any{"__meta_kubernetes_service_name"}, "regex": svc}},
	}
	if m.PlainHTTP {
		endpoint["scheme"] = "http"
	} else {
		if d.Certificate == nil || !env.ScrapeTokens {
			return nil
		}
		ca := map[string]any{"name": feednames.PumpTLS(feed.Name), "key": "ca.crt"}
		if d.Certificate.NamespaceCA() {
			ca = map[string]any{"name": feednames.PumpCA, "key": "ca.crt"}
		}
		endpoint["scheme"] = "https"
		endpoint["authorization"] = map[string]any{"type": "Bearer",
			"credentials": map[string]any{"name": feednames.PumpScrapeTokens, "key": feed.Name}}
		endpoint["tlsConfig"] = map[string]any{"serverName": feednames.PumpServiceDNSName(feed), "ca": map[string]any{"secret": ca}}
	}
	u := MonitoringKey("ServiceMonitor", meta.Namespace, meta.Name)
	labels := maps.Clone(m.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, meta.Labels)
	u.SetLabels(labels)
	u.SetOwnerReferences(meta.OwnerReferences)
	u.Object["spec"] = map[string]any{
		"namespaceSelector": map[string]any{"matchNames": []any{feed.Namespace}},
		"selector":          map[string]any{"matchLabels": stringMap(objectLabels(feed.Name))},
		"endpoints":         []any{endpoint},
	}
	return u
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func objectLabels(feed string) map[string]string {
	l := feednames.PodLabels(feed)
	l[feednames.LabelManagedBy] = feednames.ManagedBy
	l[feednames.LabelFeed] = feednames.FeedLabelValue(feed)
	return l
}

func controllerRef(ff *v1alpha1.FlightFeed) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "FlightFeed", Name: ff.Name, UID: ff.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// secretNames are the Secrets ff names, sorted and unique: the only ones
// its pump may read.
func secretNames(ff *v1alpha1.FlightFeed) []string {
	s := ff.Spec
	names := []string{s.Mailbox.DSNSecretRef.Name, s.Database.DSNSecretRef.Name}
	if r := s.Database.ReadDSNSecretRef; r != nil {
		names = append(names, r.Name)
	}
	if t := s.Kafka.TLS; t != nil && t.SecretRef != nil {
		names = append(names, t.SecretRef.Name)
	}
	if s.Kafka.SASL != nil {
		names = append(names, s.Kafka.SASL.SecretRef.Name)
	}
	if t := s.Mailbox.TLS; t != nil && t.SecretRef != nil {
		names = append(names, t.SecretRef.Name)
	}
	if t := s.Database.TLS; t != nil && t.SecretRef != nil {
		names = append(names, t.SecretRef.Name)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	slices.Sort(names)
	return slices.Compact(names)
}

// pumpRules are everything a feed's pump pods may do, in the feed's
// namespace only: read their own FlightFeed and write its status, keep its
// FlightFeedDays, hold its Lease, record Events, and get the Secrets it
// names — no other Secret. (Authenticating read API and metrics callers,
// TokenReview and SubjectAccessReview, is cluster-scoped: the operator
// binds the pump's ServiceAccount to system:auth-delegator separately.)
func pumpRules(ff *v1alpha1.FlightFeed) []rbacv1.PolicyRule {
	key := types.NamespacedName{Namespace: ff.Namespace, Name: ff.Name}
	rules := []rbacv1.PolicyRule{
		// list and watch with resourceNames: the pump's cache asks for its
		// one FlightFeed with a metadata.name field selector.
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"flightfeeds"},
			ResourceNames: []string{ff.Name}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"flightfeeds/status"},
			ResourceNames: []string{ff.Name}, Verbs: []string{"get", "patch", "update"}},
		// FlightFeedDays are named per day: no resourceNames possible.
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"flightfeeddays"},
			Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"flightfeeddays/status"},
			Verbs: []string{"get", "patch"}},
		// watch with resourceNames: a standby watches the one Lease with a
		// metadata.name field selector instead of reading it every retry
		// period.
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			ResourceNames: []string{feednames.Lease(key)}, Verbs: []string{"get", "update", "watch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	if names := secretNames(ff); len(names) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: names, Verbs: []string{"get"}})
	}
	return rules
}

// AuthDelegatorSubjects are the subjects of the operator's binding to
// system:auth-delegator: the pump ServiceAccount of every feed that is not
// being deleted, sorted by namespace and name (the pumps authenticate read
// API and metrics callers with TokenReview and SubjectAccessReview).
func AuthDelegatorSubjects(feeds []v1alpha1.FlightFeed) []rbacv1.Subject {
	subjects := make([]rbacv1.Subject, 0, len(feeds))
	for _, f := range feeds {
		if f.DeletionTimestamp.IsZero() {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: f.Namespace, Name: feednames.Pump(f.Name)})
		}
	}
	slices.SortFunc(subjects, func(a, b rbacv1.Subject) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return subjects
}

// renderDeployment renders the pump Deployment and says what of
// spec.pump it did not render as written (status.pumpPods.adjusted).
func renderDeployment(ff *v1alpha1.FlightFeed, d PumpDefaults, meta metav1.ObjectMeta, replicas int32) (*appsv1.Deployment, []string) {
	p := ff.Spec.Pump
	podLabels := feednames.PodLabels(ff.Name)
	tmplLabels := maps.Clone(d.PodLabels)
	if tmplLabels == nil {
		tmplLabels = map[string]string{}
	}
	maps.Copy(tmplLabels, podLabels)
	annotations := maps.Clone(d.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationGeneration] = strconv.FormatInt(ff.Generation, 10)

	resources, adjusted := boundResources(p.Resources, d)
	nodeSelector, tolerations, affinity := d.NodeSelector, d.Tolerations, d.Affinity
	if d.AllowPlacementFromSpec {
		if p.NodeSelector != nil {
			nodeSelector = p.NodeSelector
		}
		if p.Tolerations != nil {
			tolerations = p.Tolerations
		}
		if p.Affinity != nil {
			affinity = p.Affinity
		}
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{{"nodeSelector", p.NodeSelector != nil}, {"tolerations", p.Tolerations != nil}, {"affinity", p.Affinity != nil}} {
			if f.set {
				adjusted = append(adjusted, "spec.pump."+f.name+" is ignored: the operator places pump pods as the chart says (pump.allowPlacementFromSpec is off)")
			}
		}
	}
	spread := p.TopologySpreadConstraints
	if spread == nil {
		spread = d.TopologySpreadConstraints
	}
	if spread == nil {
		spread = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.ScheduleAnyway}}
	}
	// Every constraint selects this feed's pods, whoever wrote it.
	spread = slices.Clone(spread)
	for i := range spread {
		if spread[i].LabelSelector == nil {
			spread[i].LabelSelector = &metav1.LabelSelector{MatchLabels: podLabels}
		}
	}
	// --in-pod: the pod's loopback is the pod itself, so a broker there is
	// refused (a pump run outside the cluster may use one).
	args := []string{"pump", "--feed", ff.Namespace + "/" + ff.Name, "--in-pod",
		"--metrics-bind-address", portAddr(d.Ports.Metrics),
		"--health-probe-bind-address", portAddr(d.Ports.Probes),
		"--api-bind-address", portAddr(d.Ports.API)}
	env := append([]corev1.EnvVar{
		// The pod's name is its identity in the Lease and in pipeline_lock.
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}, d.Env...)
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if d.Certificate != nil {
		// cert-manager's Secret, not optional: a pod waits for its
		// certificate rather than serve a self-signed one; the pump reloads
		// the files when a renewal changes them. The API server's default
		// mode, written out (a template equal to what the server stores is
		// not written back at every reconcile): readable whatever the pod's
		// fsGroup, in a pod of one container.
		args = append(args, "--api-cert-dir", PumpTLSDir, "--metrics-cert-dir", PumpTLSDir)
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: feednames.PumpTLS(ff.Name), DefaultMode: ptr.To(corev1.SecretVolumeSourceDefaultMode)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tls", MountPath: PumpTLSDir, ReadOnly: true})
	}
	args = append(args, d.Args...) // last: the chart's extraArgs win
	ports := []corev1.ContainerPort{{Name: "probes", ContainerPort: d.Ports.Probes}}
	if d.Ports.Metrics > 0 {
		ports = append(ports, corev1.ContainerPort{Name: "metrics", ContainerPort: d.Ports.Metrics})
	}
	if d.Ports.API > 0 {
		ports = append(ports, corev1.ContainerPort{Name: "api", ContainerPort: d.Ports.API})
	}
	grace := int64(d.TerminationGracePeriod.Seconds())
	return &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			// A new pod stands by before an old one goes: a rollout hands
			// the Lease over once, from a stopping leader to a ready pod.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}},
			RevisionHistoryLimit: ptr.To(int32(3)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tmplLabels, Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName:            meta.Name,
					ImagePullSecrets:              d.ImagePullSecrets,
					PriorityClassName:             d.PriorityClassName,
					SecurityContext:               d.PodSecurityContext,
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  nodeSelector,
					Tolerations:                   tolerations,
					Affinity:                      affinity,
					TopologySpreadConstraints:     spread,
					EnableServiceLinks:            ptr.To(false),
					Volumes:                       volumes,
					Containers: []corev1.Container{{
						Name:            "pump",
						Image:           d.Image,
						ImagePullPolicy: d.ImagePullPolicy,
						Args:            args,
						Env:             env,
						Ports:           ports,
						Resources:       resources,
						SecurityContext: d.SecurityContext,
						VolumeMounts:    mounts,
						// /healthz fails when the held Lease is not renewed or
						// a stopped pump hangs; /readyz while the API server
						// does not answer: a standby is Ready.
						LivenessProbe:  probe("/healthz", 10, 10),
						ReadinessProbe: probe("/readyz", 0, 5),
					}},
				},
			},
		},
	}, adjusted
}

func portAddr(port int32) string {
	if port <= 0 {
		return "0"
	}
	return ":" + strconv.Itoa(int(port))
}

// probe is an HTTP probe of path on the probes port, with the API server's
// defaults for what it does not choose written out (the stored template
// then holds the rendered one: see SetTemplate).
func probe(path string, initialDelay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes"),
			Scheme: corev1.URISchemeHTTP}},
		InitialDelaySeconds: initialDelay, PeriodSeconds: period,
		TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
}

func renderService(ff *v1alpha1.FlightFeed, d PumpDefaults, meta metav1.ObjectMeta) *corev1.Service {
	var ports []corev1.ServicePort
	if d.Ports.API > 0 {
		ports = append(ports, corev1.ServicePort{Name: "api", Port: d.Ports.API, TargetPort: intstr.FromString("api"), Protocol: corev1.ProtocolTCP})
	}
	if d.Ports.Metrics > 0 {
		ports = append(ports, corev1.ServicePort{Name: "metrics", Port: d.Ports.Metrics, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP})
	}
	if len(ports) == 0 {
		// A Service needs a port; the probes' one carries no data.
		ports = append(ports, corev1.ServicePort{Name: "probes", Port: d.Ports.Probes, TargetPort: intstr.FromString("probes"), Protocol: corev1.ProtocolTCP})
	}
	return &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
		Type:     corev1.ServiceTypeClusterIP,
		Selector: feednames.PodLabels(ff.Name),
		Ports:    ports,
	}}
}

// CertManagerKey is an empty cert-manager object of that kind and name:
// the operator reads and writes them unstructured (uncached: it keeps no
// informer on a kind that may not be installed), without cert-manager's
// Go module.
func CertManagerKey(kind, namespace, name string) *unstructured.Unstructured {
	return unstructuredKey(CertManagerGroup+"/"+CertManagerVersion, kind, namespace, name)
}

// MonitoringKey is the same for the Prometheus Operator's kinds.
func MonitoringKey(kind, namespace, name string) *unstructured.Unstructured {
	return unstructuredKey(MonitoringGroup+"/"+MonitoringVersion, kind, namespace, name)
}

func unstructuredKey(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}
