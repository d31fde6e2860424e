// Package kafkatest starts an in-process kfake Kafka broker on loopback TCP
// for one test, and finds the shared test broker that `make test` runs.
package kafkatest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerEnv names the variable holding the shared test broker's address(es),
// set by hack/test.sh after it starts hack/kfake-broker.
const BrokerEnv = "FLIGHTFEED_TEST_KAFKA"

// New starts a broker listening on a free loopback port, with topics
// created (3 partitions each), and returns its seed addresses. It stops
// when t ends.
func New(t testing.TB, topics ...string) []string {
	t.Helper()
	return start(t, 3, nil, topics)
}

// NewLimited starts a broker as New does whose records may be at most
// maxBytes (its message.max.bytes: what a topic without its own
// max.message.bytes accepts), with topics created with partitions
// partitions each: the broker that refuses a large record for good
// (MESSAGE_TOO_LARGE). SetTopicLimit changes a topic's limit later.
func NewLimited(t testing.TB, maxBytes int, partitions int32, topics ...string) []string {
	t.Helper()
	return start(t, partitions, map[string]string{"message.max.bytes": fmt.Sprint(maxBytes)}, topics)
}

func start(t testing.TB, partitions int32, configs map[string]string, topics []string) []string {
	t.Helper()
	// Without kfake.Ports each broker listens on a free 127.0.0.1 port.
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	if configs != nil {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs()
}

// SetTopicLimit sets the topics' max.message.bytes to n at the broker, as
// an operator does to make a topic accept larger (or only smaller) records.
func SetTopicLimit(t testing.TB, brokers []string, n int, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	v := fmt.Sprint(n)
	for _, topic := range topics {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = "max.message.bytes", &v, kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatalf("kafkatest: alter max.message.bytes of %v: %v", topics, err)
	}
	// A topic the broker did not answer for was not changed either.
	if len(resp.Resources) != len(topics) {
		t.Fatalf("kafkatest: alter max.message.bytes of %v: the broker answered for %d topic(s): %+v", topics, len(resp.Resources), resp.Resources)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("kafkatest: alter max.message.bytes of %s: error %d", r.ResourceName, r.ErrorCode)
		}
	}
}

// Shared returns the address(es) of the broker `make test` started.
func Shared(t testing.TB) []string {
	t.Helper()
	v := os.Getenv(BrokerEnv)
	if v == "" {
		t.Fatalf("kafkatest: %s is not set; run the suite with `make test`, which starts hack/kfake-broker", BrokerEnv)
	}
	return strings.Split(v, ",")
}
