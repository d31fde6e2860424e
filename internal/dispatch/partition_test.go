package dispatch_test

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// murmur2 is the Java client's Utils.murmur2, written from its definition
// (seed 0x9747b28c, m 0x5bd1e995, r 24, little-endian words).
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := n &^ 3
	switch n % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is the Java client's default partition of a keyed record:
// toPositive(murmur2(key)) % partitions.
func javaPartition(key []byte, partitions int32) int32 {
	return (murmur2(key) & 0x7fffffff) % partitions
}

// The reference vectors of Kafka's UtilsTest.testMurmur2.
func TestMurmur2MatchesKafkaVectors(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := murmur2([]byte(in)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
	if got := javaPartition([]byte("foobar"), 50); got != 16 {
		t.Errorf("partition of foobar over 50 = %d, want 16", got)
	}
}

// Every record lands where the Java client would put its key, on both
// topics, so consumers in any language agree on a FLID's partition.
func TestRecordKeysPartitionLikeTheJavaClient(t *testing.T) {
	t.Parallel()
	const partitions = 12
	e := newEnv(t)
	c := cluster(t, kfake.SeedTopics(partitions, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, ""), dispatch.Options{})
	flids := []flight.FLID{1, 7, 42, 999, 121112312, 999999999999}
	for i := range 60 {
		flids = append(flids, flight.FLID(100000+i*7919))
	}
	for _, f := range flids {
		e.flop(f, "ESTT", "09SEP260900")
	}
	deliverAll(t, d)
	used := map[int32]bool{}
	for _, topic := range []string{stateTopic, noticeTopic} {
		records := dispatchtest.Records(t, brokers, topic)
		if len(records) != len(flids) {
			t.Fatalf("%s: %d records, want %d", topic, len(records), len(flids))
		}
		for _, r := range records {
			if _, err := strconv.ParseUint(r.Key, 10, 64); err != nil {
				t.Errorf("key %q is not a decimal FLID", r.Key)
			}
			if want := javaPartition([]byte(r.Key), partitions); r.Partition != want {
				t.Errorf("%s: key %s in partition %d, the Java client uses %d", topic, r.Key, r.Partition, want)
			}
			used[r.Partition] = true
		}
	}
	if len(used) < partitions/2 {
		t.Errorf("only %d of %d partitions used", len(used), partitions)
	}
}
