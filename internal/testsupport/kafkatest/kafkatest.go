// Package kafkatest starts an in-process kfake Kafka broker on loopback TCP
// for one test, and finds the shared test broker that `make test` runs.
package kafkatest

import (
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// BrokerEnv names the variable holding the shared test broker's address(es),
// set by hack/test.sh after it starts hack/kfake-broker.
const BrokerEnv = "FLIGHTFEED_TEST_KAFKA"

// New starts a broker listening on a free loopback port, with topics
// created (3 partitions each), and returns its seed addresses. It stops
// when t ends.
func New(t testing.TB, topics ...string) []string {
	t.Helper()
	// Without kfake.Ports each broker listens on a free 127.0.0.1 port.
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(3, topics...))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs()
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
