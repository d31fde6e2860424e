package config_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// A broker the FlightFeed's author names is dialled from the pump pod, and
// an IP literal is opened in its NetworkPolicy: the cloud's metadata
// service and link-local addresses are refused, in a resource and in a
// config file, naming the broker and why.
func TestBrokerAddressesAreBounded(t *testing.T) {
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		broker string
		want   string // in the refusal; "" allowed
	}{
		{"169.254.169.254:80", "instance metadata service"},
		{"[fd00:ec2::254]:80", "AWS instance metadata service (IPv6)"},
		{"[fd20:ce::254]:80", "GCP instance metadata service (IPv6)"},
		{"100.100.100.200:80", "Alibaba Cloud"},
		{"192.0.0.192:80", "Oracle Cloud"},
		{"168.63.129.16:80", "Azure platform endpoint"},
		{"169.254.170.2:80", "ECS task metadata"},
		{"169.254.1.1:9092", "link-local"},
		{"[fe80::1]:9092", "link-local"},
		{"[::ffff:169.254.169.254]:80", "instance metadata service"},
		{"[64:ff9b::a9fe:a9fe]:80", "through NAT64"},
		{"metadata.google.internal:80", "GCP instance metadata service"},
		{"Metadata.Google.Internal.:80", "GCP instance metadata service"},
		{"instance-data.ec2.internal:80", "AWS instance metadata service"},
		{"2852039166:80", "other than dotted decimal"},
		{"0xa9fea9fe:80", "other than dotted decimal"},
		{"169.254.43518:80", "other than dotted decimal"},
		{"224.0.0.1:9092", "multicast"},
		{"255.255.255.255:9092", "broadcast"},
		// Ordinary brokers, and loopback (the DSNs' rule: local runs and
		// the test harnesses).
		{"kafka.example:9092", ""},
		{"kafka-0.kafka.ops.svc:9093", ""},
		{"10.1.2.3:9093", ""},
		{"[2001:db8::1]:9093", ""},
		{"100.64.0.1:9092", ""},
		{"127.0.0.1:9092", ""},
		{"localhost:9092", ""},
		{"b-1.abc123.c2.kafka.eu-west-1.amazonaws.com:9096", ""},
	}
	for _, c := range cases {
		t.Run(c.broker, func(t *testing.T) {
			for _, root := range []*field.Path{field.NewPath("spec"), nil} {
				spec := feed.Spec
				spec.Kafka.Brokers = []string{"kafka.example:9092", c.broker}
				_, errs := config.ValidateSpec(&spec, root)
				got := errs.ToAggregate()
				if c.want == "" {
					if got != nil {
						t.Errorf("root %v: refused: %v", root, got)
					}
					continue
				}
				prefix := "kafka.brokers[1]"
				if root != nil {
					prefix = "spec." + prefix
				}
				if len(errs) != 1 || !strings.HasPrefix(got.Error(), prefix+": Invalid value: ") ||
					!strings.Contains(got.Error(), c.broker) || !strings.Contains(got.Error(), c.want) {
					t.Errorf("root %v: got %v, want one refusal of %s (%q)", root, got, c.broker, c.want)
				}
			}
		})
	}
}

// In a cluster a broker on loopback, localhost or the unspecified address
// is the pump pod itself: refused with the reason, under the field's name;
// any other address is not this check's.
func TestInClusterBrokersRefusesTheLoopback(t *testing.T) {
	spec := &v1alpha1.FlightFeedSpec{Kafka: v1alpha1.KafkaSpec{Brokers: []string{
		"127.0.0.1:9092", "kafka.example:9092", "localhost:9092", "127.1.2.3:9093", "0.0.0.0:9092", "10.0.0.7:9092", "[::1]:9092"}}}
	errs := config.InClusterBrokers(spec, field.NewPath("spec"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
		if !strings.Contains(e.Detail, "the pod itself") {
			t.Errorf("%s: %q does not say why", e.Field, e.Detail)
		}
	}
	want := []string{"spec.kafka.brokers[0]", "spec.kafka.brokers[2]", "spec.kafka.brokers[3]", "spec.kafka.brokers[4]", "spec.kafka.brokers[6]"}
	if !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
}
