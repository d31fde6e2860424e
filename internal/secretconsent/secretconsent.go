package secretconsent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AllFeeds is the feeds annotation's value that lets every FlightFeed of
// the Secret's namespace use the Secret (it stands alone).
const AllFeeds = "*"

// Sentinel errors of the decisions; errors.Is tells them apart.
var (
	// ErrMissing: the Secret has no such annotation (a Secret made before
	// the annotations existed): it names no feed and no broker.
	ErrMissing = errors.New("annotation missing")
	// ErrInvalid: the annotation's value does not parse; nothing is
	// allowed by it.
	ErrInvalid = errors.New("invalid annotation")
	// ErrNotNamed: the feeds annotation is valid and does not name the
	// feed.
	ErrNotNamed = errors.New("feed not named")
	// ErrNotAllowed: the brokers annotation is valid and does not allow
	// some of the brokers.
	ErrNotAllowed = errors.New("broker not allowed")
)

// Feeds is a parsed feeds annotation.
type Feeds struct {
	// All is "*": every feed of the namespace.
	All bool
	// Names are the feeds named, in the annotation's order, without
	// repeats.
	Names []string
}

// ParseFeeds parses the value of the feeds annotation: "*" alone, or a
// comma-separated list of FlightFeed names (object names, DNS-1123
// subdomains), spaces around each ignored. An empty value, an empty item,
// "*" among names or a name that no FlightFeed can have is ErrInvalid.
func ParseFeeds(v string) (Feeds, error) {
	if strings.TrimSpace(v) == AllFeeds {
		return Feeds{All: true}, nil
	}
	if strings.TrimSpace(v) == "" {
		return Feeds{}, fmt.Errorf("%w: empty: name the feeds (pek,pvg) or write %q for every feed of the namespace", ErrInvalid, AllFeeds)
	}
	var f Feeds
	for item := range strings.SplitSeq(v, ",") {
		name := strings.TrimSpace(item)
		switch name {
		case "":
			return Feeds{}, fmt.Errorf("%w: %q has an empty item", ErrInvalid, v)
		case AllFeeds:
			return Feeds{}, fmt.Errorf("%w: %q: %q stands alone, not among names", ErrInvalid, v, AllFeeds)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return Feeds{}, fmt.Errorf("%w: %q is no FlightFeed name: %s", ErrInvalid, name, strings.Join(errs, "; "))
		}
		if !slices.Contains(f.Names, name) {
			f.Names = append(f.Names, name)
		}
	}
	return f, nil
}

// Allows reports whether the annotation lets the feed named feed (of the
// Secret's namespace) use the Secret. Names match exactly (object names
// are lower case).
func (f Feeds) Allows(feed string) bool {
	return f.All || slices.Contains(f.Names, feed)
}

// With is the annotation's value once feed is added to it.
func (f Feeds) With(feed string) string {
	if f.Allows(feed) {
		return f.String()
	}
	return strings.Join(append(slices.Clone(f.Names), feed), ",")
}

func (f Feeds) String() string {
	if f.All {
		return AllFeeds
	}
	return strings.Join(f.Names, ",")
}

// CheckFeed decides whether a Secret whose feeds annotation is v (present:
// whether it has one at all) lets feed use it. It returns the parsed
// annotation (empty when missing or invalid) and nil, ErrMissing,
// ErrInvalid or, for a valid annotation that does not name the feed,
// ErrNotNamed.
func CheckFeed(v string, present bool, feed string) (Feeds, error) {
	if !present {
		return Feeds{}, ErrMissing
	}
	f, err := ParseFeeds(v)
	if err != nil {
		return Feeds{}, err
	}
	if !f.Allows(feed) {
		return f, ErrNotNamed
	}
	return f, nil
}

// Broker is one entry of the brokers annotation: a host and, optional, a
// port.
type Broker struct {
	// Host as written (a DNS name or an IP address, IPv6 without
	// brackets).
	Host string
	// Port, 0 when the entry gives none (any port of that host).
	Port int
}

func (b Broker) String() string {
	if b.Port == 0 {
		if strings.Contains(b.Host, ":") {
			return "[" + b.Host + "]"
		}
		return b.Host
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
}

// dnsName is a host name of labels of letters, digits and inner hyphens.
// No wildcard: every host is listed as itself.
var dnsName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$`)

// ParseBroker parses one entry: "host", "host:port", "[ipv6]" or
// "[ipv6]:port" (an IPv6 address without brackets is a host without
// port). The host is a DNS name (at most 253 characters, no wildcard) or
// an IP address; the port 1 to 65535.
func ParseBroker(entry string) (Broker, error) {
	e := strings.TrimSpace(entry)
	host, port := e, ""
	switch {
	case strings.HasPrefix(e, "["):
		end := strings.Index(e, "]")
		if end < 0 {
			return Broker{}, fmt.Errorf("%w: %q: no closing ]", ErrInvalid, entry)
		}
		host, port = e[1:end], e[end+1:]
		if port != "" {
			if !strings.HasPrefix(port, ":") {
				return Broker{}, fmt.Errorf("%w: %q: after ] only :port", ErrInvalid, entry)
			}
			port = port[1:]
			if port == "" {
				return Broker{}, fmt.Errorf("%w: %q: empty port", ErrInvalid, entry)
			}
		}
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return Broker{}, fmt.Errorf("%w: %q: brackets hold an IPv6 address", ErrInvalid, entry)
		}
	case strings.Count(e, ":") == 1:
		host, port, _ = strings.Cut(e, ":")
		if port == "" {
			return Broker{}, fmt.Errorf("%w: %q: empty port", ErrInvalid, entry)
		}
	}
	b := Broker{Host: host}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
			return Broker{}, fmt.Errorf("%w: %q: port must be 1 to 65535", ErrInvalid, entry)
		}
		b.Port = n
	}
	if host == "" {
		return Broker{}, fmt.Errorf("%w: %q: no host", ErrInvalid, entry)
	}
	if strings.Contains(host, "*") {
		return Broker{}, fmt.Errorf("%w: %q: no wildcards: list every host", ErrInvalid, entry)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return b, nil
	}
	if len(host) > 253 || !dnsName.MatchString(host) {
		return Broker{}, fmt.Errorf("%w: %q: the host must be a DNS name or an IP address", ErrInvalid, entry)
	}
	return b, nil
}

// ParseBrokers parses the value of the brokers annotation: entries
// (ParseBroker) separated by commas, spaces around each ignored. An empty
// value or an empty item is ErrInvalid: an annotation that allows nothing
// is a mistake, not a policy (remove kafka.sasl instead).
func ParseBrokers(v string) ([]Broker, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("%w: empty: list the broker hosts (kafka-1.example:9093,kafka-2.example:9093)", ErrInvalid)
	}
	var out []Broker
	for item := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(item) == "" {
			return nil, fmt.Errorf("%w: %q has an empty item", ErrInvalid, v)
		}
		b, err := ParseBroker(item)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Allows reports whether the entry b allows sending credentials to
// broker, a "host:port" of kafka.brokers. The hosts match exactly,
// case-insensitively (no wildcard, no suffix match, no name resolution;
// two IP addresses match when they are the same address, so
// 0:0:0:0:0:0:0:1 is ::1); a port given in the entry must be broker's, an
// entry without one allows every port of the host.
func (b Broker) Allows(broker string) bool {
	host, port, err := net.SplitHostPort(broker)
	if err != nil {
		return false
	}
	if !sameHost(b.Host, host) {
		return false
	}
	if b.Port == 0 {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n == b.Port
}

func sameHost(a, b string) bool {
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	if errX == nil && errY == nil {
		return x.Unmap() == y.Unmap()
	}
	if errX == nil || errY == nil {
		// An address never equals a name: nothing is resolved.
		return false
	}
	return strings.EqualFold(a, b)
}

// Refused returns the brokers (kafka.brokers entries, "host:port") that no
// entry of allowed allows, in their order.
func Refused(allowed []Broker, brokers []string) []string {
	var out []string
	for _, br := range brokers {
		if !slices.ContainsFunc(allowed, func(b Broker) bool { return b.Allows(br) }) && !slices.Contains(out, br) {
			out = append(out, br)
		}
	}
	return out
}

// BrokersWith is the value of the brokers annotation that keeps allowed
// and adds brokers.
func BrokersWith(allowed []Broker, brokers []string) string {
	items := make([]string, 0, len(allowed)+len(brokers))
	for _, b := range allowed {
		items = append(items, b.String())
	}
	for _, br := range brokers {
		if !slices.Contains(items, br) {
			items = append(items, br)
		}
	}
	return strings.Join(items, ",")
}

// CheckBrokers decides whether a SASL Secret whose brokers annotation is v
// (present: whether it has one) lets its credentials go to every one of
// brokers. It returns the parsed annotation, the brokers it refuses and
// nil, ErrMissing (every broker refused), ErrInvalid or ErrNotAllowed.
func CheckBrokers(v string, present bool, brokers []string) ([]Broker, []string, error) {
	if !present {
		return nil, Refused(nil, brokers), ErrMissing
	}
	allowed, err := ParseBrokers(v)
	if err != nil {
		return nil, nil, err
	}
	if refused := Refused(allowed, brokers); len(refused) > 0 {
		return allowed, refused, ErrNotAllowed
	}
	return allowed, nil, nil
}
