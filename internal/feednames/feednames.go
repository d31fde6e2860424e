// Package feednames names the Kubernetes objects that belong to one
// FlightFeed: its pump Deployment and the objects around it, and its Lease.
// The operator (controllers) creates them and the pump pods (pumppod) find
// them by these names, so both import this package and neither imports the
// other. It is pure: no client, no I/O.
package feednames

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// pumpSuffix ends the name of every per-feed object ("pek-pump").
	pumpSuffix = "-pump"
	// maxPumpName keeps "<feed>-pump" short enough for the names Kubernetes
	// derives from a Deployment's: the ReplicaSet adds "-" and up to 10
	// characters, the pod another "-" and 5, and a pod's host name is a
	// DNS label of at most 63.
	maxPumpName = 63 - 11 - 6
	// hashLen hex digits of SHA-256 end a shortened name.
	hashLen = 16
	// leasePrefix starts every feed Lease name.
	leasePrefix = "flightfeed."
	// maxLeaseName keeps Lease names label-sized.
	maxLeaseName = 63
)

// Pump is the name of the feed's pump Deployment and of its
// ServiceAccount, Role, RoleBinding, Service, PodDisruptionBudget and
// NetworkPolicy, all in the feed's namespace: "<feed>-pump", or, when that
// is longer than 46 characters, the feed's name cut and ended by a hash of
// it, so two feeds never share one.
//
// A Service's name is a DNS-1035 label (no dots, a letter first), which a
// FlightFeed's name need not be: a name with a dot gets the hashed form
// with its dots made dashes, and one that starts with a digit gets "ff-"
// in front.
func Pump(feed string) string {
	base := feed
	if base != "" && base[0] >= '0' && base[0] <= '9' {
		base = "ff-" + base
	}
	name := base + pumpSuffix
	if len(name) <= maxPumpName && !strings.Contains(name, ".") {
		return name
	}
	sum := sha256.Sum256([]byte(feed))
	hash := hex.EncodeToString(sum[:])[:hashLen]
	keep := base
	if n := maxPumpName - len(pumpSuffix) - len(hash) - 1; len(keep) > n {
		keep = keep[:n]
	}
	return trimTail(strings.ReplaceAll(keep, ".", "-")) + "-" + hash + pumpSuffix
}

// Lease is the name of the feed's Lease, in the feed's namespace:
// "flightfeed.<namespace>.<name>" when that has at most 62 characters.
// Releases that ran every pump inside the operator kept the Lease of the
// same name in the operator's namespace; a feed in that namespace keeps its
// very Lease across the upgrade. A namespace has no dots, so the first dot
// after the prefix tells namespace and name apart and two feeds never
// share a name. Longer ones are cut to exactly 63 characters ending in "-"
// and 16 hex digits of SHA-256 of "<namespace>/<name>": a length no short
// name has, so a shortened name can only meet another shortened one (a
// 64-bit hash collision).
func Lease(feed types.NamespacedName) string {
	name := leasePrefix + feed.Namespace + "." + feed.Name
	if len(name) < maxLeaseName {
		return name
	}
	sum := sha256.Sum256([]byte(feed.Namespace + "/" + feed.Name))
	hash := hex.EncodeToString(sum[:])[:hashLen]
	// Replace (never drop) a trailing '.' or '-', so the length stays
	// exactly 63.
	b := []byte(name[:maxLeaseName-len(hash)-1])
	for i := len(b) - 1; i >= 0 && (b[i] == '.' || b[i] == '-'); i-- {
		b[i] = 'x'
	}
	return string(b) + "-" + hash
}

// trimTail drops the dots and dashes a cut name may end in: a DNS label
// may not have "--" or ".-" where the hash is joined.
func trimTail(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '.' || s[len(s)-1] == '-') {
		s = s[:len(s)-1]
	}
	return s
}

// Labels of every object the operator makes for a feed.
const (
	// LabelManagedBy is app.kubernetes.io/managed-by; the operator's cache
	// of owned objects selects on it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is its value.
	ManagedBy = "flightfeed-operator"
	// LabelComponent is app.kubernetes.io/component, "pump" on the pump's
	// objects and pods.
	LabelComponent = "app.kubernetes.io/component"
	// LabelFeed names the feed ("flightfeed.aero/feed": the same key as the
	// FlightFeedDays').
	LabelFeed = "flightfeed.aero/feed"
	// LabelInstance is app.kubernetes.io/instance: the feed's name.
	LabelInstance = "app.kubernetes.io/instance"
)

// PodLabels select a feed's pump pods.
func PodLabels(feed string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": "flightfeed",
		LabelComponent:           "pump",
		LabelInstance:            feedLabelValue(feed),
	}
}

// feedLabelValue is the feed's name when it is a valid label value (at most
// 63 characters), else its cut, hashed form.
func feedLabelValue(feed string) string {
	if len(feed) <= 63 {
		return feed
	}
	sum := sha256.Sum256([]byte(feed))
	return trimTail(feed[:63-hashLen-1]) + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// FeedLabelValue is the value of LabelFeed and LabelInstance for feed.
func FeedLabelValue(feed string) string { return feedLabelValue(feed) }

// APIPort is the name of the read API's port on the pump pods and on the
// feed's Service: the API server's service proxy reaches the API as
// "https:<Pump(feed)>:api".
const APIPort = "api"

// Audience is the token audience the feed's read API accepts: a token
// made for it (`kubectl create token SA --audience flightfeed.aero/NS/NAME`)
// is good for this feed's read API only, never for the API server nor
// another feed, so a receiver cannot replay it anywhere else.
func Audience(feed types.NamespacedName) string {
	return "flightfeed.aero/" + feed.Namespace + "/" + feed.Name
}

// PumpTLS is the name of the feed's cert-manager Certificate and of the
// kubernetes.io/tls Secret it fills, mounted into the pump pods for the
// read API and the metrics endpoint: "<Pump(feed)>-tls".
func PumpTLS(feed string) string { return Pump(feed) + "-tls" }

// PumpServiceDNSName is the name the feed's pump Service answers to in
// the cluster, "<Pump(feed)>.<namespace>.svc": the name a client of the
// feed (the feed's own ServiceMonitor) verifies its pump pods' certificate
// by.
func PumpServiceDNSName(feed types.NamespacedName) string {
	return Pump(feed.Name) + "." + feed.Namespace + ".svc"
}

// PumpDNSNames are the names a pump certificate is issued for: the feed's
// Service ("<Pump(feed)>.<namespace>.svc" and, with a cluster domain such
// as cluster.local, its fully qualified name), nothing else. No name is
// shared between feeds or namespaces: a certificate of one feed's pump is
// no good for another's.
func PumpDNSNames(feed types.NamespacedName, clusterDomain string) []string {
	svc := PumpServiceDNSName(feed)
	names := []string{svc}
	if clusterDomain != "" {
		names = append(names, svc+"."+clusterDomain)
	}
	return names
}

// Objects the operator keeps once per namespace holding a FlightFeed,
// owned by every FlightFeed of the namespace (they go with the last one).
const (
	// PumpCA names the namespace's pump CA: the cert-manager Issuer that
	// signs the pump certificates of the namespace's feeds, its CA
	// Certificate and that Certificate's Secret. Each namespace has a CA of
	// its own, so nobody in one namespace can obtain a certificate that a
	// client of another namespace's pump accepts.
	PumpCA = "flightfeed-pump-ca"
	// PumpCASelfSigned names the self-signed Issuer that signs PumpCA's
	// certificate, nothing else.
	PumpCASelfSigned = "flightfeed-pump-ca-selfsigned"
	// PumpScrapeTokens names the Secret holding, under each feed's name, a
	// short-lived token of the metrics scraper made for that feed's
	// audience alone: the feed's ServiceMonitor sends it to the feed's pump
	// pods only (a ServiceMonitor reads Secrets of its own namespace).
	PumpScrapeTokens = "flightfeed-pump-scrape-tokens"
)
