package feedobjects

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// PumpDefaults is what the operator puts into every pump Deployment that
// the FlightFeed does not say itself: the image (the operator's own), the
// pods' resources and placement, their security context, the pump's
// command-line flags and the NetworkPolicy. The chart writes it as a file
// (values pump.*), read by `flightfeed manager --pump-defaults`.
type PumpDefaults struct {
	// Image runs the pumps: the operator's own image. Required.
	Image string `json:"image"`
	// ImagePullPolicy of the pump container (default IfNotPresent).
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// ImagePullSecrets are named in every pump pod (they must exist in the
	// feed's namespace).
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// Resources of the pump container unless spec.pump.resources is set.
	// Always with a memory limit (DefaultPumpMemoryLimit when it has
	// none).
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// ResourceBounds bound spec.pump.resources: a value outside them is
	// clamped, and said in status.pumpPods.adjusted. A spec without a
	// memory limit gets the one of Resources.
	ResourceBounds PumpResourceBounds `json:"resourceBounds,omitempty"`
	// NodeSelector, Tolerations, Affinity and TopologySpreadConstraints
	// unless the FlightFeed sets its own (its nodeSelector, tolerations
	// and affinity only with AllowPlacementFromSpec). With no topology
	// spread given, a feed's pods spread over nodes
	// (kubernetes.io/hostname, ScheduleAnyway).
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// AllowPlacementFromSpec lets spec.pump.nodeSelector, tolerations and
	// affinity place the pump pods. Off (the chart's default), they are
	// ignored and said in status.pumpPods.adjusted: whoever may edit a
	// FlightFeed could otherwise tolerate the control plane's taints and
	// select its nodes.
	AllowPlacementFromSpec bool `json:"allowPlacementFromSpec,omitempty"`
	// PriorityClassName of the pump pods.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// PodSecurityContext and SecurityContext (default: non-root 65532,
	// read-only root file system, no capabilities, RuntimeDefault seccomp).
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	SecurityContext    *corev1.SecurityContext    `json:"securityContext,omitempty"`
	// TerminationGracePeriod of the pump pods (default 45s: stopping the
	// pump, the last status and the Lease's release fit in it).
	TerminationGracePeriod *metav1Duration `json:"terminationGracePeriod,omitempty"`
	// Args are added to `pump --feed NS/NAME` (lease timings, log level,
	// ports, ...).
	Args []string `json:"args,omitempty"`
	// Env is added to the pump container.
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Ports of the pump container: metrics, probes and the read API. 0
	// takes the default (8080, 8081, 8082); a negative metrics or api port
	// turns that endpoint off (the chart's metrics.enabled and api.enabled
	// false).
	Ports PumpPorts `json:"ports,omitempty"`
	// PodLabels and PodAnnotations are added to every pump pod.
	PodLabels      map[string]string `json:"podLabels,omitempty"`
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// NetworkPolicy, when set, is rendered around each feed's pump pods.
	NetworkPolicy *PumpNetworkPolicy `json:"networkPolicy,omitempty"`
	// Certificate, when set, has cert-manager issue each feed's pump pods
	// a certificate (a Certificate <feed>-pump-tls in the feed's
	// namespace) for the feed's Service names only, which they serve on
	// the read API and the metrics endpoint instead of a self-signed one.
	// Unset: self-signed, made at start.
	Certificate *PumpCertificate `json:"certificate,omitempty"`
	// ServiceMonitor, when set, has the operator write each feed a
	// Prometheus Operator ServiceMonitor of its pump pods' metrics, in the
	// feed's namespace (see renderServiceMonitor). Unset: none.
	ServiceMonitor *PumpServiceMonitor `json:"serviceMonitor,omitempty"`
}

// PumpCertificate is how each feed's pump certificate is issued.
type PumpCertificate struct {
	// IssuerRef names a cert-manager issuer of your own: a ClusterIssuer,
	// or an Issuer, which must then exist in each feed's namespace. Empty
	// (the chart's default): the operator keeps a CA of each feed
	// namespace's own (feednames.PumpCA: a self-signed CA Certificate and
	// the CA Issuer it backs) and issues the namespace's pump certificates
	// with it, so a certificate obtained in one namespace is never one a
	// client of another namespace's pump accepts.
	IssuerRef IssuerRef `json:"issuerRef,omitempty"`
	// ClusterDomain adds "<Service>.<namespace>.svc.<ClusterDomain>" to the
	// certificate's names (default cluster.local).
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// NamespaceCA reports whether the certificates are issued by each
// namespace's own CA (no issuer of the user's named).
func (c PumpCertificate) NamespaceCA() bool { return c.IssuerRef.Name == "" }

// IssuerRef is cert-manager's reference to an issuer.
type IssuerRef struct {
	Name  string `json:"name,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// PumpServiceMonitor is the ServiceMonitor of each feed's pump pods.
type PumpServiceMonitor struct {
	// Interval between scrapes (default 30s).
	Interval string `json:"interval,omitempty"`
	// Labels of every ServiceMonitor, e.g. the one a Prometheus selects
	// ServiceMonitors by.
	Labels map[string]string `json:"labels,omitempty"`
	// PlainHTTP: the pump pods serve metrics over plain HTTP to anyone
	// (--metrics-secure=false, local clusters): scraped over HTTP, with no
	// token. Otherwise they are scraped over HTTPS with a token made for
	// the feed alone, and only when the pods' certificate is cert-manager's
	// (Certificate) and the operator can make such tokens: a token goes
	// only to a pod that proves the feed's Service name.
	PlainHTTP bool `json:"plainHTTP,omitempty"`
}

// PumpTLSDir is where a pump pod mounts its certificate's Secret.
const PumpTLSDir = "/etc/flightfeed/tls"

// metav1Duration is a duration in a YAML file ("45s").
type metav1Duration struct{ time.Duration }

// UnmarshalJSON reads "45s".
func (d *metav1Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	d.Duration = v
	return nil
}

// PumpPorts are the pump container's ports.
type PumpPorts struct {
	Metrics int32 `json:"metrics,omitempty"`
	Probes  int32 `json:"probes,omitempty"`
	API     int32 `json:"api,omitempty"`
}

// PumpNetworkPolicy is the NetworkPolicy of each feed's pump pods.
// Ingress: the read API and metrics ports from the listed peers, the probe
// port from anywhere (the kubelet). Egress: DNS, the API server, and what
// the feed itself resolves to — its mailbox's and databases' host:port
// (from the DSNs) and each Kafka broker's — nothing else (see
// renderNetworkPolicy).
type PumpNetworkPolicy struct {
	IngressFrom []networkingv1.NetworkPolicyPeer `json:"ingressFrom,omitempty"`
	// Egress rules every feed's pods get as written: DNS, and any rule the
	// chart's values add (networkPolicy.egress.*.ports).
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty"`
	// APIServer is the API server's rule: its ports, and its addresses
	// when known (cidrs); without them the operator looks them up (the
	// kubernetes Service of namespace default and its EndpointSlice).
	APIServer *APIServerEgress `json:"apiServer,omitempty"`
	// Mailbox, Database and Brokers bound the per-feed rules: a host given
	// by name is opened on its port to these networks only (to any address
	// without them), and an address outside them is not opened at all.
	Mailbox  DependencyNetworks `json:"mailbox,omitempty"`
	Database DependencyNetworks `json:"database,omitempty"`
	Brokers  DependencyNetworks `json:"brokers,omitempty"`
}

// APIServerEgress is the pump pods' egress to the API server.
type APIServerEgress struct {
	// Ports of the API server: the kubernetes Service's (443) and the API
	// server's own (6443): most CNIs judge a connection after the Service
	// address is translated to the endpoint's.
	Ports []int32 `json:"ports,omitempty"`
	// CIDRs of the API server (and the kubernetes Service's address).
	// Empty: looked up.
	CIDRs []string `json:"cidrs,omitempty"`
}

// DependencyNetworks are the networks one kind of dependency lives in.
type DependencyNetworks struct {
	CIDRs []string `json:"cidrs,omitempty"`
}

// Default ports of the pump container.
const (
	DefaultMetricsPort = 8080
	DefaultProbesPort  = 8081
	DefaultAPIPort     = 8082
	// DefaultTerminationGracePeriod of the pump pods.
	DefaultTerminationGracePeriod = 45 * time.Second
	// DefaultScrapeInterval of the pumps' ServiceMonitors.
	DefaultScrapeInterval = "30s"
)

func apiServerCIDRs(a *APIServerEgress) []string {
	if a == nil {
		return nil
	}
	return a.CIDRs
}

// ParsePumpDefaults reads a PumpDefaults file's content (YAML or JSON);
// unknown keys are an error, so a misspelt chart value is not silently
// ignored. The error names no file: the caller, which read it, does.
func ParsePumpDefaults(b []byte) (PumpDefaults, error) {
	var d PumpDefaults
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		return PumpDefaults{}, err
	}
	return d, nil
}

// ErrNoImage refuses defaults without the pump image.
var ErrNoImage = errors.New("pump defaults: image is required (the operator's own image)")

// WithDefaults fills what is unset and checks what is required: Render
// takes defaults that have been through it.
func (d PumpDefaults) WithDefaults() (PumpDefaults, error) {
	if d.Image == "" {
		return d, ErrNoImage
	}
	if d.ImagePullPolicy == "" {
		d.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if d.Ports.Metrics == 0 {
		d.Ports.Metrics = DefaultMetricsPort
	}
	if d.Ports.Probes == 0 {
		d.Ports.Probes = DefaultProbesPort
	}
	if d.Ports.API == 0 {
		d.Ports.API = DefaultAPIPort
	}
	if d.PodSecurityContext == nil {
		d.PodSecurityContext = defaultPodSecurityContext()
	}
	if d.SecurityContext == nil {
		d.SecurityContext = defaultSecurityContext()
	}
	if err := d.checkResources(); err != nil {
		return d, err
	}
	if d.TerminationGracePeriod == nil {
		d.TerminationGracePeriod = &metav1Duration{DefaultTerminationGracePeriod}
	}
	if c := d.Certificate; c != nil {
		c = ptr.To(*c)
		switch {
		case c.NamespaceCA():
			if c.IssuerRef.Kind != "" || c.IssuerRef.Group != "" {
				return d, errors.New("pump defaults: certificate.issuerRef has a kind or group but no name: name your issuer, or leave issuerRef empty for each namespace's own CA")
			}
		default:
			switch c.IssuerRef.Kind {
			case "":
				c.IssuerRef.Kind = "ClusterIssuer"
			case "ClusterIssuer", "Issuer":
			default:
				if c.IssuerRef.Group == "" || c.IssuerRef.Group == CertManagerGroup {
					return d, fmt.Errorf("pump defaults: certificate.issuerRef.kind %q: cert-manager's issuers are ClusterIssuer or Issuer", c.IssuerRef.Kind)
				}
			}
			if c.IssuerRef.Group == "" {
				c.IssuerRef.Group = CertManagerGroup
			}
		}
		if c.ClusterDomain == "" {
			c.ClusterDomain = "cluster.local"
		}
		d.Certificate = c
	}
	if m := d.ServiceMonitor; m != nil {
		m = ptr.To(*m)
		if m.Interval == "" {
			m.Interval = DefaultScrapeInterval
		}
		d.ServiceMonitor = m
	}
	if np := d.NetworkPolicy; np != nil {
		for _, n := range []struct {
			name  string
			cidrs []string
		}{{"apiServer", apiServerCIDRs(np.APIServer)}, {"mailbox", np.Mailbox.CIDRs}, {"database", np.Database.CIDRs}, {"brokers", np.Brokers.CIDRs}} {
			for _, c := range n.cidrs {
				if _, err := netip.ParsePrefix(c); err != nil {
					return d, fmt.Errorf("pump defaults: networkPolicy.%s.cidrs: %q is not a CIDR: %w", n.name, c, err)
				}
			}
		}
	}
	return d, nil
}

func defaultPodSecurityContext() *corev1.PodSecurityContext {
	id := int64(65532)
	yes := true
	return &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &id, RunAsGroup: &id, FSGroup: &id,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func defaultSecurityContext() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// cert-manager's API, which the operator writes Certificates of without
// importing its Go module (unstructured objects).
const (
	CertManagerGroup   = "cert-manager.io"
	CertManagerVersion = "v1"
)

// The Prometheus Operator's API, likewise.
const (
	MonitoringGroup   = "monitoring.coreos.com"
	MonitoringVersion = "v1"
)
