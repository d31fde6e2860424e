package feedobjects

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

func testFeed(edit func(*v1alpha1.FlightFeed)) *v1alpha1.FlightFeed {
	ff := &v1alpha1.FlightFeed{
		ObjectMeta: metav1.ObjectMeta{Name: "pek", Namespace: "airports", UID: "uid-1", Generation: 7},
		Spec: v1alpha1.FlightFeedSpec{
			Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-mailbox", Key: "dsn"}},
			Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "pek-db", Key: "dsn"}},
			Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"10.1.2.3:9093", "kafka.example:9092"}},
		},
	}
	if edit != nil {
		edit(ff)
	}
	return ff
}

var testDefaults = func() PumpDefaults {
	d, err := PumpDefaults{
		Image:        "registry.example/flightfeed:1.2.3",
		Args:         []string{"--lease-duration=15s"},
		Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
		NodeSelector: map[string]string{"pool": "default"},
	}.WithDefaults()
	if err != nil {
		panic(err)
	}
	return d
}()

func TestRenderPumpObjects(t *testing.T) {
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	cases := []struct {
		name  string
		edit  func(*v1alpha1.FlightFeed)
		check func(t *testing.T, o Objects)
	}{
		{"defaults: two pods, spread over nodes, a budget of one", nil, func(t *testing.T, o Objects) {
			d := o.Deployment
			if d.Name != "pek-pump" || d.Namespace != "airports" || *d.Spec.Replicas != 2 {
				t.Errorf("deployment %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
			}
			c := d.Spec.Template.Spec.Containers[0]
			// --in-pod: a broker on loopback would be the pod itself.
			if !slices.Equal(c.Args[:3], []string{"pump", "--feed", "airports/pek"}) || !slices.Contains(c.Args, "--lease-duration=15s") ||
				!slices.Contains(c.Args, "--in-pod") {
				t.Errorf("args %q", c.Args)
			}
			if c.Image != testDefaults.Image || c.Resources.Limits.Memory().String() != "256Mi" {
				t.Errorf("image %s resources %v", c.Image, c.Resources)
			}
			if d.Spec.Template.Spec.NodeSelector["pool"] != "default" {
				t.Errorf("node selector %v", d.Spec.Template.Spec.NodeSelector)
			}
			ts := d.Spec.Template.Spec.TopologySpreadConstraints
			if len(ts) != 1 || ts[0].TopologyKey != corev1.LabelHostname || ts[0].LabelSelector == nil ||
				ts[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "pek" {
				t.Errorf("spread %+v", ts)
			}
			if d.Spec.Template.Annotations[AnnotationGeneration] != "7" {
				t.Errorf("template annotations %v", d.Spec.Template.Annotations)
			}
			if d.Spec.Template.Spec.ServiceAccountName != "pek-pump" || o.RoleBinding.Subjects[0].Name != "pek-pump" {
				t.Errorf("service account %q, binding %+v", d.Spec.Template.Spec.ServiceAccountName, o.RoleBinding.Subjects)
			}
			if o.PDB == nil || o.PDB.Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("pdb %+v", o.PDB)
			}
			if o.NetworkPolicy != nil {
				t.Error("a NetworkPolicy without the defaults enabling it")
			}
			if o.Lease.Name != "flightfeed.airports.pek" || o.Lease.Namespace != "airports" {
				t.Errorf("lease %s/%s", o.Lease.Namespace, o.Lease.Name)
			}
			for _, m := range []metav1.ObjectMeta{d.ObjectMeta, o.Service.ObjectMeta, o.Role.ObjectMeta, o.Lease.ObjectMeta, o.ServiceAccount.ObjectMeta} {
				if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "uid-1" || !ptr.Deref(m.OwnerReferences[0].Controller, false) {
					t.Errorf("%s: owners %+v", m.Name, m.OwnerReferences)
				}
			}
			if sel := o.Service.Spec.Selector; sel["app.kubernetes.io/component"] != "pump" || sel["app.kubernetes.io/instance"] != "pek" {
				t.Errorf("service selector %v", sel)
			}
		}},
		{"one replica: no budget", func(ff *v1alpha1.FlightFeed) { ff.Spec.Pump.Replicas = ptr.To(int32(1)) }, func(t *testing.T, o Objects) {
			if *o.Deployment.Spec.Replicas != 1 || o.PDB != nil {
				t.Errorf("replicas %d pdb %+v", *o.Deployment.Spec.Replicas, o.PDB)
			}
		}},
		{"the spec's resources and topology spread win (placement: TestPlacementFromSpecOnlyWhenAllowed)", func(ff *v1alpha1.FlightFeed) {
			ff.Spec.Pump.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
			ff.Spec.Pump.TopologySpreadConstraints = spread
		}, func(t *testing.T, o Objects) {
			p := o.Deployment.Spec.Template.Spec
			if p.Containers[0].Resources.Limits.Memory().String() != "1Gi" ||
				len(p.TopologySpreadConstraints) != 1 || p.TopologySpreadConstraints[0].MaxSkew != 2 ||
				p.TopologySpreadConstraints[0].LabelSelector == nil {
				t.Errorf("pod spec %+v", p)
			}
			if spread[0].LabelSelector != nil {
				t.Error("rendering changed the FlightFeed's own constraint")
			}
		}},
		{"the Role names the feed's own objects and Secrets, nothing else", func(ff *v1alpha1.FlightFeed) {
			ff.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{SecretRef: v1alpha1.SecretRef{Name: "pek-sasl"}}
			ff.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{SecretRef: &v1alpha1.SecretRef{Name: "pek-db"}}
			ff.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "pek-read", Key: "dsn"}
		}, func(t *testing.T, o Objects) {
			var secrets, leases, feeds []string
			for _, r := range o.Role.Rules {
				switch {
				case slices.Contains(r.Resources, "secrets"):
					secrets = r.ResourceNames
					if !slices.Equal(r.Verbs, []string{"get"}) {
						t.Errorf("secret verbs %v", r.Verbs)
					}
				case slices.Contains(r.Resources, "leases"):
					leases = r.ResourceNames
				case slices.Contains(r.Resources, "flightfeeds"):
					feeds = r.ResourceNames
				}
				if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
					t.Errorf("wildcard rule %+v", r)
				}
			}
			if !slices.Equal(secrets, []string{"pek-db", "pek-mailbox", "pek-read", "pek-sasl"}) {
				t.Errorf("secrets %v", secrets)
			}
			if !slices.Equal(leases, []string{"flightfeed.airports.pek"}) || !slices.Equal(feeds, []string{"pek"}) {
				t.Errorf("leases %v feeds %v", leases, feeds)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ff := testFeed(c.edit)
			c.check(t, render(ff, testDefaults))
		})
	}
}

// spec.pump.nodeSelector, tolerations and affinity could put a feed's
// pods on the control plane's nodes: they are the chart's to allow, and
// when it does not, ignored and said so.
func TestPlacementFromSpecOnlyWhenAllowed(t *testing.T) {
	controlPlane := func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Pump.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		ff.Spec.Pump.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		ff.Spec.Pump.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists}}}}}}}
	}
	// Off (the chart's default): the chart's placement, three notes.
	o := render(testFeed(controlPlane), testDefaults)
	p := o.Deployment.Spec.Template.Spec
	if !maps.Equal(p.NodeSelector, map[string]string{"pool": "default"}) || p.Tolerations != nil || p.Affinity != nil {
		t.Errorf("placement from the spec without the chart's leave: nodeSelector %v tolerations %v affinity %v", p.NodeSelector, p.Tolerations, p.Affinity)
	}
	want := []string{"spec.pump.nodeSelector is ignored", "spec.pump.tolerations is ignored", "spec.pump.affinity is ignored"}
	if len(o.Adjusted) != len(want) {
		t.Fatalf("adjusted %q", o.Adjusted)
	}
	for i, w := range want {
		if !strings.HasPrefix(o.Adjusted[i], w) || !strings.Contains(o.Adjusted[i], "pump.allowPlacementFromSpec") {
			t.Errorf("adjusted[%d] %q, want %q", i, o.Adjusted[i], w)
		}
	}
	// Allowed: the spec's, nothing said.
	d := testDefaults
	d.AllowPlacementFromSpec = true
	o = render(testFeed(controlPlane), d)
	p = o.Deployment.Spec.Template.Spec
	if _, ok := p.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok || len(p.Tolerations) != 1 || p.Affinity == nil || len(o.Adjusted) != 0 {
		t.Errorf("allowed: nodeSelector %v tolerations %v affinity %v adjusted %q", p.NodeSelector, p.Tolerations, p.Affinity, o.Adjusted)
	}
	// No placement in the spec: nothing said either way.
	if o := render(testFeed(nil), testDefaults); len(o.Adjusted) != 0 {
		t.Errorf("adjusted %q", o.Adjusted)
	}
}

func TestRenderNetworkPolicy(t *testing.T) {
	d := testDefaults
	dns := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstrPort(53))}}}
	d.NetworkPolicy = &PumpNetworkPolicy{Egress: []networkingv1.NetworkPolicyEgressRule{dns}}
	np := render(testFeed(nil), d).NetworkPolicy
	if np == nil {
		t.Fatal("no NetworkPolicy")
	}
	// DNS, then the broker named by address, then the one named by host
	// name: its port, to any address (a NetworkPolicy names no host).
	if len(np.Spec.Egress) != 3 || np.Spec.Egress[1].To[0].IPBlock.CIDR != "10.1.2.3/32" || np.Spec.Egress[1].Ports[0].Port.IntValue() != 9093 ||
		len(np.Spec.Egress[2].To) != 0 || np.Spec.Egress[2].Ports[0].Port.IntValue() != 9092 {
		t.Errorf("egress %+v", np.Spec.Egress)
	}
	if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != DefaultProbesPort {
		t.Errorf("ingress without peers: %+v", np.Spec.Ingress)
	}
}

// A broker given as the metadata service's or a link-local address opens
// no egress: the pump refuses the feed, and nothing else in the pod may
// reach the address through the feed's policy either.
func TestNetworkPolicyOpensNoRefusedBroker(t *testing.T) {
	d := testDefaults
	d.NetworkPolicy = &PumpNetworkPolicy{}
	ff := testFeed(func(ff *v1alpha1.FlightFeed) {
		ff.Spec.Kafka.Brokers = []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80",
			"169.254.7.7:9092", "[fe80::1]:9092", "[::ffff:169.254.169.254]:80", "10.1.2.3:9093", "10.1.2.4:0"}
	})
	np := render(ff, d).NetworkPolicy
	var got []string
	for _, e := range np.Spec.Egress {
		got = append(got, e.To[0].IPBlock.CIDR+" "+e.Ports[0].Port.String())
	}
	if !slices.Equal(got, []string{"10.1.2.3/32 9093"}) {
		t.Errorf("egress %q, want only 10.1.2.3/32 9093", got)
	}
}

// status.pumpPods summarises the Deployment field by field: the desired
// count (spec, not the status's surge pod), the ready and updated pods,
// "ready/desired", the generation the template was rendered from and —
// only once the rollout is complete — the generation every pod runs, with
// the previous one kept until then.
func TestPumpPodsStatus(t *testing.T) {
	ff := testFeed(nil)
	ff.Status.PumpPods = &v1alpha1.PumpPodsStatus{Generation: 6}
	dep := render(ff, testDefaults).Deployment
	dep.Generation = 3
	adjusted := []string{"spec.pump.resources.limits.memory 64Gi is above the chart's maximum 2Gi: 2Gi is rendered"}
	cases := []struct {
		name    string
		status  appsv1.DeploymentStatus
		wantGen int64
		ready   string
		// ReadyReplicas and UpdatedReplicas as summarised.
		readyReplicas, updated int32
	}{
		{"rolling out: the pods still run the previous generation",
			appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}, 6, "2/2", 2, 1},
		{"controller has not seen the new template",
			appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}, 6, "2/2", 2, 2},
		{"rolled out",
			appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}, 7, "2/2", 2, 2},
		{"no pod ready", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2}, 6, "0/2", 0, 2},
		{"one ready, none updated yet", appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 0, ReadyReplicas: 1, AvailableReplicas: 1}, 6, "1/2", 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dep.Status = c.status
			s := PumpPodsStatus(ff, dep, "", adjusted)
			if s.Generation != c.wantGen || s.Ready != c.ready || s.ObservedGeneration != 7 || s.Deployment != "pek-pump" {
				t.Errorf("%+v", s)
			}
			want := v1alpha1.PumpPodsStatus{Deployment: "pek-pump", Replicas: 2, ReadyReplicas: c.readyReplicas, Ready: c.ready,
				UpdatedReplicas: c.updated, Generation: c.wantGen, ObservedGeneration: 7, Adjusted: adjusted}
			if !reflect.DeepEqual(*s, want) {
				t.Errorf("status.pumpPods\n  %+v\nwant\n  %+v", *s, want)
			}
		})
	}
	s := PumpPodsStatus(ff, nil, "waiting", nil)
	if s.Waiting != "waiting" || s.Generation != 6 || s.Ready != "0/0" {
		t.Errorf("waiting: %+v", s)
	}
	// Nothing made yet: no pod counted.
	if want := (v1alpha1.PumpPodsStatus{Deployment: "pek-pump", Ready: "0/0", Generation: 6, Waiting: "waiting"}); !reflect.DeepEqual(*s, want) {
		t.Errorf("waiting: %+v, want %+v", *s, want)
	}
}

// A negative metrics or api port turns the endpoint off: no container port,
// no Service port, the pump told to serve nothing there.
func TestPortsTurnedOff(t *testing.T) {
	d, err := PumpDefaults{Image: "x", Ports: PumpPorts{Metrics: -1, API: -1}}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o := render(testFeed(nil), d)
	c := o.Deployment.Spec.Template.Spec.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "probes" || !slices.Contains(c.Args, "--api-bind-address") ||
		c.Args[slices.Index(c.Args, "--api-bind-address")+1] != "0" || c.Args[slices.Index(c.Args, "--metrics-bind-address")+1] != "0" {
		t.Errorf("container ports %+v args %q", c.Ports, c.Args)
	}
	if len(o.Service.Spec.Ports) != 1 || o.Service.Spec.Ports[0].Name != "probes" {
		t.Errorf("service ports %+v", o.Service.Spec.Ports)
	}
}

// Defaults without the pump image are refused with that reason, whatever
// else they set; with an image the same defaults are taken.
func TestPumpDefaultsNeedAnImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    PumpDefaults
	}{
		{"nothing set", PumpDefaults{}},
		{"everything but the image", PumpDefaults{Args: []string{"--lease-duration=15s"}, Ports: PumpPorts{Metrics: -1},
			Certificate: &PumpCertificate{}, ServiceMonitor: &PumpServiceMonitor{}, NetworkPolicy: &PumpNetworkPolicy{}}},
	} {
		_, err := tc.d.WithDefaults()
		if !errors.Is(err, ErrNoImage) {
			t.Errorf("%s: err %v, want ErrNoImage", tc.name, err)
		}
		if want := "pump defaults: image is required (the operator's own image)"; err == nil || err.Error() != want {
			t.Errorf("%s: the operator says %v, want %q", tc.name, err, want)
		}
		withImage := tc.d
		withImage.Image = "registry.example/flightfeed:1.2.3"
		if d, err := withImage.WithDefaults(); err != nil || d.Image != withImage.Image {
			t.Errorf("%s, with an image: %v (image %q)", tc.name, err, d.Image)
		}
	}
}

func intstrPort(p int) intstr.IntOrString { return intstr.FromInt(p) }

// render is Render with nothing found beyond the feed and the defaults.
func render(ff *v1alpha1.FlightFeed, d PumpDefaults) Objects { return Render(ff, d, Env{}) }

// With an issuer in the defaults, each feed gets a cert-manager Certificate
// for its Service's names (and no other), owned by the feed, and its pods
// serve that Secret's files on the read API and metrics; without one, no
// Certificate and no mount (the self-signed certificate).
func TestRenderPumpCertificate(t *testing.T) {
	d, err := PumpDefaults{Image: "x", Args: []string{"--api-cert-dir=/mine"},
		Certificate: &PumpCertificate{IssuerRef: IssuerRef{Name: "corp-ca"}}}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o := render(testFeed(nil), d)
	c := o.Certificate
	if c == nil {
		t.Fatal("no Certificate")
	}
	if c.GetAPIVersion() != "cert-manager.io/v1" || c.GetKind() != "Certificate" || c.GetName() != "pek-pump-tls" || c.GetNamespace() != "airports" {
		t.Errorf("certificate %s %s %s/%s", c.GetAPIVersion(), c.GetKind(), c.GetNamespace(), c.GetName())
	}
	if refs := c.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "uid-1" {
		t.Errorf("owners %+v", refs)
	}
	names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
	if want := []string{"pek-pump.airports.svc", "pek-pump.airports.svc.cluster.local"}; !slices.Equal(names, want) {
		t.Errorf("dnsNames %q, want %q", names, want)
	}
	secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
	issuer, _, _ := unstructured.NestedStringMap(c.Object, "spec", "issuerRef")
	if secret != "pek-pump-tls" || issuer["name"] != "corp-ca" || issuer["kind"] != "ClusterIssuer" || issuer["group"] != "cert-manager.io" {
		t.Errorf("secret %q issuer %v", secret, issuer)
	}
	p := o.Deployment.Spec.Template.Spec
	if len(p.Volumes) != 1 || p.Volumes[0].Secret == nil || p.Volumes[0].Secret.SecretName != "pek-pump-tls" || p.Volumes[0].Secret.Optional != nil {
		t.Errorf("volumes %+v", p.Volumes)
	}
	m := p.Containers[0].VolumeMounts
	if len(m) != 1 || m[0].Name != "tls" || m[0].MountPath != PumpTLSDir || !m[0].ReadOnly {
		t.Errorf("mounts %+v", m)
	}
	args := p.Containers[0].Args
	at := slices.Index(args, "--api-cert-dir")
	if at < 0 || args[at+1] != PumpTLSDir || !slices.Contains(args, "--metrics-cert-dir") || slices.Index(args, "--api-cert-dir=/mine") < at {
		t.Errorf("args %q: the certificate's folder for both endpoints, the defaults' own args after them", args)
	}

	plain := render(testFeed(nil), testDefaults)
	if plain.Certificate != nil || len(plain.Deployment.Spec.Template.Spec.Volumes) != 0 || slices.Contains(plain.Deployment.Spec.Template.Spec.Containers[0].Args, "--api-cert-dir") {
		t.Errorf("no issuer, yet a certificate: %v, volumes %+v", plain.Certificate != nil, plain.Deployment.Spec.Template.Spec.Volumes)
	}
}

func TestPumpCertificateDefaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c       PumpCertificate
		kind    string
		domain  string
		refused string
	}{
		{"kind defaults to ClusterIssuer", PumpCertificate{IssuerRef: IssuerRef{Name: "ca"}}, "ClusterIssuer", "cluster.local", ""},
		{"an Issuer in each namespace", PumpCertificate{IssuerRef: IssuerRef{Name: "ca", Kind: "Issuer"}, ClusterDomain: "corp.internal"}, "Issuer", "corp.internal", ""},
		{"an external issuer of its own group", PumpCertificate{IssuerRef: IssuerRef{Name: "v", Kind: "VaultIssuer", Group: "vault.example"}}, "VaultIssuer", "cluster.local", ""},
		{"no issuer: each namespace's own CA", PumpCertificate{}, "", "cluster.local", ""},
		{"a kind without a name", PumpCertificate{IssuerRef: IssuerRef{Kind: "ClusterIssuer"}}, "", "", "kind or group but no name"},
		{"an unknown kind of cert-manager's", PumpCertificate{IssuerRef: IssuerRef{Name: "ca", Kind: "Issuers"}}, "", "", `kind "Issuers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.c
			d, err := PumpDefaults{Image: "x", Certificate: &in}.WithDefaults()
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err %v, want it to say %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Certificate.IssuerRef.Kind != tc.kind || d.Certificate.ClusterDomain != tc.domain {
				t.Errorf("kind %q domain %q, want %q %q", d.Certificate.IssuerRef.Kind, d.Certificate.ClusterDomain, tc.kind, tc.domain)
			}
			if in != tc.c {
				t.Error("WithDefaults changed the caller's PumpCertificate")
			}
		})
	}
}
