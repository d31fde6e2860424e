package kafkatest_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

func produceAndConsume(t *testing.T, brokers []string, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	want := map[string]string{"121112312": `{"FLID":"121112312"}`, "121119845": `{"FLID":"121119845"}`}
	for k, v := range want {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce to %v: %v", brokers, err)
		}
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := map[string]string{}
	for len(got) < len(want) {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), len(want), err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s: got %q, want %q", k, got[k], v)
		}
	}
}

func TestInProcessBrokerOverTCP(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.New(t, "KAFKA_SCHD")
	if !strings.HasPrefix(brokers[0], "127.0.0.1:") {
		t.Fatalf("broker is not on loopback TCP: %v", brokers)
	}
	produceAndConsume(t, brokers, "KAFKA_SCHD")
}

// A limited broker refuses a record batch larger than its limit for good
// (MESSAGE_TOO_LARGE), and takes it once SetTopicLimit raises the topic's.
func TestLimitedBrokerAndTopicLimit(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.NewLimited(t, 4096, 1, "KAFKA_SCHD")
	if !strings.HasPrefix(brokers[0], "127.0.0.1:") {
		t.Fatalf("broker is not on loopback TCP: %v", brokers)
	}
	// Uncompressed, so the batch is as large as the value; each record
	// delivered or failed within 30s.
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	small := &kgo.Record{Topic: "KAFKA_SCHD", Value: []byte(strings.Repeat("s", 1000))}
	if err := producer.ProduceSync(t.Context(), small).FirstErr(); err != nil {
		t.Fatalf("a record under the limit: %v", err)
	}
	large := &kgo.Record{Topic: "KAFKA_SCHD", Value: []byte(strings.Repeat("l", 8000))}
	if err := producer.ProduceSync(t.Context(), large).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("a record over the broker's limit: %v, want MESSAGE_TOO_LARGE", err)
	}
	kafkatest.SetTopicLimit(t, brokers, 1<<20, "KAFKA_SCHD")
	large = &kgo.Record{Topic: "KAFKA_SCHD", Value: []byte(strings.Repeat("l", 8000))}
	if err := producer.ProduceSync(t.Context(), large).FirstErr(); err != nil {
		t.Fatalf("the same record once the topic accepts 1 MiB: %v", err)
	}
}

// The shared broker from hack/kfake-broker is reachable over TCP, and an
// independent client (kcat, librdkafka) reads what franz-go wrote.
func TestSharedBrokerWithKcat(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Shared(t)
	topic := "KAFKA_SCHD"
	produceAndConsume(t, brokers, topic)

	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found; `bash hack/services.sh` installs it (Debian package kcat)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(brokers, ","), "-t", topic,
		"-o", "beginning", "-e", "-q", "-f", "%k=%s\n").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	for _, want := range []string{`121112312={"FLID":"121112312"}`, `121119845={"FLID":"121119845"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kcat did not read %s:\n%s", want, out)
		}
	}
}
