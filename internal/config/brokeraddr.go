package config

import (
	"net"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// A Kafka broker is a host the FlightFeed's author chooses, and the pump
// dials it from the pod (and, for an IP literal, the operator opens the
// pod's NetworkPolicy egress to it). Some addresses are never a broker and
// are what an attacker who may edit a FlightFeed but not the cluster wants
// to reach: the cloud's instance metadata service (node credentials),
// link-local addresses (the metadata service's range, the node's own
// agents). BrokerAddressRefusal says why such a host is refused. Loopback
// is allowed where the pump runs as a process of the machine (a config
// file, a test harness's pump of FlightFeeds against brokers on
// 127.0.0.1), and refused where it runs in a cluster (InClusterBrokers):
// a pump pod's loopback is the pod itself.
// docs/security.md, "What an editor may set", lists them.

// metadataAddresses are clouds' instance metadata and platform endpoints
// that are not link-local (the link-local ones, 169.254.169.254 and
// 169.254.170.2 among them, are refused with their whole range).
var metadataAddresses = map[netip.Addr]string{
	netip.MustParseAddr("169.254.169.254"): "the instance metadata service of AWS, GCP, Azure, OpenStack and others",
	netip.MustParseAddr("169.254.170.2"):   "the ECS task metadata endpoint",
	netip.MustParseAddr("fd00:ec2::254"):   "the AWS instance metadata service (IPv6)",
	netip.MustParseAddr("fd20:ce::254"):    "the GCP instance metadata service (IPv6)",
	netip.MustParseAddr("100.100.100.200"): "the Alibaba Cloud instance metadata service",
	netip.MustParseAddr("192.0.0.192"):     "the Oracle Cloud instance metadata service",
	netip.MustParseAddr("168.63.129.16"):   "the Azure platform endpoint (WireServer)",
}

// metadataNames are host names of metadata services: a name is not
// resolved here, but these are never a broker.
var metadataNames = map[string]string{
	"metadata.google.internal":     "the GCP instance metadata service",
	"metadata":                     "the GCP instance metadata service",
	"instance-data":                "the AWS instance metadata service",
	"instance-data.ec2.internal":   "the AWS instance metadata service",
	"metadata.azure.com":           "the Azure instance metadata service",
	"metadata.tencentyun.com":      "the Tencent Cloud instance metadata service",
	"metadata.platformequinix.com": "the Equinix Metal metadata service",
}

var (
	linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
	// NAT64's well-known prefix carries an IPv4 address in its last 32
	// bits: 64:ff9b::a9fe:a9fe is 169.254.169.254 through the translator.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// BrokerAddressRefusal is why a broker host (a name or an IP address,
// without port or brackets) may not be dialled, "" when it may.
func BrokerAddressRefusal(host string) string {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if why, ok := metadataNames[name]; ok {
		return "is " + why + ", never a broker"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if numericHost(name) {
			return "is an IPv4 address in a form other than dotted decimal (a resolver may read it as one): write the address as a.b.c.d"
		}
		return ""
	}
	if ip.Zone() != "" {
		return "has an IPv6 zone: a broker is a routable address"
	}
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		if why := BrokerAddressRefusal(netip.AddrFrom4([4]byte(b[12:])).String()); why != "" {
			return "is an IPv4 address through NAT64 that " + why
		}
	}
	if why, ok := metadataAddresses[ip]; ok {
		return "is " + why + ", never a broker"
	}
	switch {
	case linkLocal4.Contains(ip) || linkLocal6.Contains(ip):
		return "is link-local (169.254.0.0/16, fe80::/10: cloud metadata services and the node's own agents), never a broker"
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "is a multicast or broadcast address, never a broker"
	}
	return ""
}

// numericHost reports whether a host name's last label is all digits or
// a 0x number: no DNS name ends so (a top-level domain is never numeric),
// but inet_aton reads "2852039166", "0xa9fea9fe" or "169.254.43518" as an
// IPv4 address.
func numericHost(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return last == "" || strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// InClusterBrokers refuses the kafka.brokers a pump running in a cluster
// can never mean: loopback (127.0.0.0/8, ::1, localhost) and the
// unspecified address (0.0.0.0, ::, which a dial takes for this host) are
// the pump pod itself, where no broker runs; the NetworkPolicy opens
// nothing for them either. Errors are named under root as ValidateSpec's.
func InClusterBrokers(spec *v1alpha1.FlightFeedSpec, root *field.Path) field.ErrorList {
	bp := field.NewPath("kafka", "brokers")
	if root != nil {
		bp = root.Child("kafka", "brokers")
	}
	var errs field.ErrorList
	for i, b := range spec.Kafka.Brokers {
		host, _, err := net.SplitHostPort(b)
		if err != nil {
			continue // ValidateSpec names it
		}
		ip, perr := netip.ParseAddr(host)
		if IsLoopback(host) || (perr == nil && ip.Unmap().IsUnspecified()) {
			errs = append(errs, field.Invalid(bp.Index(i), b, "broker "+host+" is this host, and in a pump pod that is the pod itself, never a broker: "+
				"name the broker by an address or a Service name the pod reaches (loopback brokers are for a pump run outside the cluster, flightfeed pump --config)"))
		}
	}
	return errs
}
