package feedobjects

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/secretconsent"
)

// DependencyAddresses are the host:port the feed's mailbox and database
// DSNs connect to (config.MailboxAddress, config.DatabaseAddresses of the
// writer's and the reader's), for the pump pods' egress: Env.Mailbox and
// Env.Database. dsn gives the value of one DSN Secret's key as the feed may
// use it (ConsentedDSN), "" when it opens nothing; its error is returned
// as it is.
func DependencyAddresses(ff *v1alpha1.FlightFeed, dsn func(v1alpha1.SecretKeyRef) (string, error)) (mailbox, database []string, err error) {
	v, err := dsn(ff.Spec.Mailbox.DSNSecretRef)
	if err != nil {
		return nil, nil, err
	}
	// "" opens nothing: the drivers would read it as their local defaults.
	if a := config.MailboxAddress(v); v != "" && a != "" {
		mailbox = append(mailbox, a)
	}
	refs := []v1alpha1.SecretKeyRef{ff.Spec.Database.DSNSecretRef}
	if r := ff.Spec.Database.ReadDSNSecretRef; r != nil {
		refs = append(refs, *r)
	}
	for _, ref := range refs {
		v, err := dsn(ref)
		if err != nil {
			return nil, nil, err
		}
		if v == "" {
			continue
		}
		for _, a := range config.DatabaseAddresses(v) {
			if !slices.Contains(database, a) {
				database = append(database, a)
			}
		}
	}
	return mailbox, database, nil
}

// ConsentedDSN is key of Secret s when s carries the consent the pump
// requires of it — the label v1alpha1.SecretLabel=true and the feed named
// in v1alpha1.FeedsAnnotation — and "" otherwise: a Secret that does not
// consent to the feed opens no egress for it.
func ConsentedDSN(s *corev1.Secret, feed, key string) string {
	v, present := s.Annotations[v1alpha1.FeedsAnnotation]
	if _, err := secretconsent.CheckFeed(v, present, feed); err != nil || s.Labels[v1alpha1.SecretLabel] != "true" {
		return ""
	}
	return string(s.Data[key])
}

// APIServerAddresses are the API server's addresses as a pod reaches it,
// sorted and unique: the ClusterIP(s) of the Service kubernetes in
// namespace default and the endpoints of its EndpointSlice of the same
// name (most CNIs judge a connection after the Service address is
// translated). An EndpointSlice listing no address is an error: the
// addresses are unknown.
func APIServerAddresses(svc *corev1.Service, slice *discoveryv1.EndpointSlice) ([]netip.Addr, error) {
	var out []netip.Addr
	add := func(s string) {
		if ip, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	for _, ip := range svc.Spec.ClusterIPs {
		add(ip)
	}
	if len(svc.Spec.ClusterIPs) == 0 {
		add(svc.Spec.ClusterIP)
	}
	endpoints := 0
	for _, e := range slice.Endpoints {
		for _, a := range e.Addresses {
			add(a)
			endpoints++
		}
	}
	if endpoints == 0 {
		return nil, errors.New("endpointslice default/kubernetes lists no address")
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out, nil
}

// renderNetworkPolicy is the feed's pump NetworkPolicy. Egress lists what
// the feed resolves to and nothing else: the defaults' rules (DNS, and
// any the chart's values add), the API server, and each host:port of the
// feed's mailbox, databases (from the DSNs: env) and Kafka brokers. An IP
// address is opened as itself (/32, /128) on its port; a host name cannot
// be named in a NetworkPolicy, so its port is opened to the dependency's
// networks of the defaults, or to any address when they list none (DNS
// resolves the name). An address the broker validation refuses (metadata
// services, link-local: config.BrokerAddressRefusal), loopback (the pod
// itself: no rule needed) and an address outside the dependency's listed
// networks are never opened; the last is said in the returned notes
// (status.pumpPods.adjusted).
func renderNetworkPolicy(ff *v1alpha1.FlightFeed, d PumpDefaults, env Env, meta metav1.ObjectMeta) (*networkingv1.NetworkPolicy, []string) {
	np := d.NetworkPolicy
	var dataPorts []networkingv1.NetworkPolicyPort
	if d.Ports.API > 0 {
		dataPorts = append(dataPorts, tcpPort(d.Ports.API))
	}
	if d.Ports.Metrics > 0 {
		dataPorts = append(dataPorts, tcpPort(d.Ports.Metrics))
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{tcpPort(d.Ports.Probes)}}}
	if len(dataPorts) > 0 && len(np.IngressFrom) > 0 {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: dataPorts, From: np.IngressFrom})
	}
	egress := slices.Clone(np.Egress)
	if a := np.APIServer; a != nil && len(a.Ports) > 0 {
		r := networkingv1.NetworkPolicyEgressRule{}
		for _, p := range a.Ports {
			r.Ports = append(r.Ports, tcpPort(p))
		}
		switch {
		case len(a.CIDRs) > 0:
			r.To = cidrPeers(a.CIDRs)
		case len(env.APIServer) > 0:
			for _, ip := range env.APIServer {
				r.To = append(r.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}})
			}
		}
		// Neither: the API server's addresses are unknown, its ports are
		// opened to any address (the reconciler logs why).
		egress = append(egress, r)
	}
	var notes []string
	seen := map[string]bool{}
	add := func(what, addr string, nets []string) {
		host, p, err := net.SplitHostPort(addr)
		n, perr := strconv.ParseUint(p, 10, 16)
		if err != nil || perr != nil || n == 0 || config.BrokerAddressRefusal(host) != "" || config.IsLoopback(host) {
			return
		}
		r := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{tcpPort(int32(n))}}
		if ip, err := netip.ParseAddr(host); err == nil {
			ip = ip.Unmap()
			if ip.IsUnspecified() {
				return
			}
			if len(nets) > 0 && !inPrefixes(ip, nets) {
				notes = append(notes, fmt.Sprintf("%s %s is outside the chart's networkPolicy.egress CIDRs for it (%s): the pump pods' NetworkPolicy does not open it",
					what, addr, strings.Join(nets, ", ")))
				return
			}
			r.To = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}}}
		} else {
			r.To = cidrPeers(nets)
		}
		k := ruleKey(r)
		if !seen[k] {
			seen[k] = true
			egress = append(egress, r)
		}
	}
	for _, a := range env.Mailbox {
		add("the mailbox", a, np.Mailbox.CIDRs)
	}
	for _, a := range env.Database {
		add("the database", a, np.Database.CIDRs)
	}
	for i, b := range ff.Spec.Kafka.Brokers {
		add(fmt.Sprintf("spec.kafka.brokers[%d]", i), b, np.Brokers.CIDRs)
	}
	return &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: feednames.PodLabels(ff.Name)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		Ingress:     ingress,
		Egress:      egress,
	}}, notes
}

// ruleKey tells equal egress rules apart by value (their fields are
// pointers).
func ruleKey(r networkingv1.NetworkPolicyEgressRule) string {
	var b strings.Builder
	for _, p := range r.Ports {
		fmt.Fprintf(&b, "%s/%s,", ptr.Deref(p.Protocol, corev1.ProtocolTCP), p.Port.String())
	}
	b.WriteString(" to ")
	for _, peer := range r.To {
		if peer.IPBlock != nil {
			fmt.Fprintf(&b, "%s,", peer.IPBlock.CIDR)
		}
	}
	return b.String()
}

func tcpPort(p int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}
}

// cidrPeers are ipBlock peers of the CIDRs (nil: any address).
func cidrPeers(cidrs []string) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, c := range cidrs {
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	return out
}

// inPrefixes reports whether ip lies in one of the CIDRs (checked by
// PumpDefaults.WithDefaults).
func inPrefixes(ip netip.Addr, cidrs []string) bool {
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(ip) {
			return true
		}
	}
	return false
}
