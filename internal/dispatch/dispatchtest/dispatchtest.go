// Package dispatchtest reads the Kafka topics the dispatcher writes, for
// tests, as a consumer must read them: with isolation.level=read_committed,
// so records of aborted or still open transactions are never seen. It
// gives every committed record of a topic from its start, the latest value
// per key with tombstones deleting (the convergence check against
// `flightfeed export`), and the per-FLID version order. It uses its own
// consumer and never the dispatcher's producer.
package dispatchtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadTimeout bounds one read of a topic.
const ReadTimeout = 60 * time.Second

// Record is one consumed record.
type Record struct {
	Partition int32
	Offset    int64
	Key       string
	// Value is nil for a Kafka null value.
	Value   []byte
	Headers map[string]string
}

// Tombstone reports whether the record deletes its key: a null value or a
// JSON document with "DELETED": true (the dispatcher's tombstone).
func (r Record) Tombstone() bool {
	if r.Value == nil {
		return true
	}
	var doc struct {
		Deleted bool `json:"DELETED"`
	}
	return json.Unmarshal(r.Value, &doc) == nil && doc.Deleted
}

// StateVersion is the record's STATE_VERSION (from its value), -1 when it
// has none.
func (r Record) StateVersion() int64 {
	var doc struct {
		V *int64 `json:"STATE_VERSION"`
	}
	if json.Unmarshal(r.Value, &doc) != nil || doc.V == nil {
		return -1
	}
	return *doc.V
}

// Records reads every committed record of topic (read_committed), from the
// start of each partition to its last stable offset as of the call, sorted
// by partition and offset. opts are added to the consumer (TLS, SASL).
func Records(t testing.TB, brokers []string, topic string, opts ...kgo.Opt) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	out, err := read(ctx, brokers, topic, opts)
	if err != nil {
		t.Fatalf("dispatchtest: read %s: %v", topic, err)
	}
	return out
}

func read(ctx context.Context, brokers []string, topic string, opts []kgo.Opt) ([]Record, error) {
	admin, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	ends, err := endOffsets(ctx, admin, topic)
	admin.Close()
	if err != nil {
		return nil, err
	}
	partitions := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			partitions[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(partitions) == 0 {
		return nil, nil
	}
	// Control records (transaction markers) are kept only to see that
	// the reader reached the end: the last offset below the stable end is
	// a committed record or a marker, never an aborted record.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: partitions}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Record
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read to offsets %v, reached %v: %w", ends, next, err)
		}
		for _, fe := range fetches.Errors() {
			return nil, fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			h := make(map[string]string, len(r.Headers))
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			out = append(out, Record{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key),
				Value: bytes.Clone(r.Value), Headers: h})
		})
	}
	slices.SortFunc(out, func(a, b Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out, nil
}

// endOffsets returns the last stable offset of every partition of topic
// (ListOffsets with read_committed): the end a read_committed consumer
// reaches without waiting for open transactions.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(mresp.Topics) != 1 {
		return nil, fmt.Errorf("metadata: %d topics in the answer", len(mresp.Topics))
	}
	if err := kerr.ErrorForCode(mresp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.IsolationLevel = 1 // read_committed
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition = p.Partition
		lp.Timestamp = -1 // latest
		lt.Partitions = append(lt.Partitions, lp)
	}
	lreq.Topics = append(lreq.Topics, lt)
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	ends := map[int32]int64{}
	for _, rt := range lresp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, rp.Partition, err)
			}
			ends[rp.Partition] = rp.Offset
		}
	}
	return ends, nil
}

// Latest folds records into the latest value per key, in offset order; a
// tombstone deletes its key.
func Latest(records []Record) map[string][]byte {
	out := map[string][]byte{}
	for _, r := range records {
		if r.Tombstone() {
			delete(out, r.Key)
			continue
		}
		out[r.Key] = r.Value
	}
	return out
}

// Converge reads the whole state topic and returns the latest value per
// key (FLID), tombstones deleting.
func Converge(t testing.TB, brokers []string, topic string, opts ...kgo.Opt) map[string][]byte {
	t.Helper()
	return Latest(Records(t, brokers, topic, opts...))
}

// AssertConverged checks that the latest record per FLID on stateTopic
// (tombstones deleting) equals exportLines, the canonical JSON lines of
// `flightfeed export`, byte for byte: the same flights, the same documents.
func AssertConverged(t testing.TB, brokers []string, stateTopic string, exportLines [][]byte, opts ...kgo.Opt) {
	t.Helper()
	if diff := ConvergedDiff(t, brokers, stateTopic, exportLines, opts...); diff != "" {
		t.Fatalf("dispatchtest: %s does not converge to the export (-export +topic):\n%s", stateTopic, diff)
	}
}

// ConvergedDiff is what AssertConverged checks, as a diff (-export +topic;
// empty when equal), for a caller that waits for the topic to converge.
func ConvergedDiff(t testing.TB, brokers []string, stateTopic string, exportLines [][]byte, opts ...kgo.Opt) string {
	t.Helper()
	want := map[string]string{}
	for i, line := range exportLines {
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			continue
		}
		var doc struct {
			FLID string `json:"FLID"`
		}
		if err := json.Unmarshal(line, &doc); err != nil || doc.FLID == "" {
			t.Fatalf("dispatchtest: export line %d has no FLID: %s (%v)", i+1, line, err)
		}
		want[doc.FLID] = string(line)
	}
	got := map[string]string{}
	for k, v := range Converge(t, brokers, stateTopic, opts...) {
		got[k] = string(v)
	}
	return cmp.Diff(want, got)
}

// AssertVersionsRise checks the state topic's order guarantees: all records
// of a key are in one partition and their STATE_VERSION never decreases
// (a repeat of the same version is a tolerated duplicate).
func AssertVersionsRise(t testing.TB, records []Record) {
	t.Helper()
	part := map[string]int32{}
	last := map[string]Record{}
	for _, r := range records {
		if p, ok := part[r.Key]; ok && p != r.Partition {
			t.Errorf("dispatchtest: key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		part[r.Key] = r.Partition
		v := r.StateVersion()
		if v < 0 {
			t.Errorf("dispatchtest: record %d/%d of key %s has no STATE_VERSION: %s", r.Partition, r.Offset, r.Key, r.Value)
			continue
		}
		if prev, ok := last[r.Key]; ok && v < prev.StateVersion() {
			t.Errorf("dispatchtest: key %s: version %d at offset %d after %d at offset %d", r.Key, v, r.Offset, prev.StateVersion(), prev.Offset)
		}
		last[r.Key] = r
	}
}

// AssertNotices checks the notice topic against the notices committed to
// the outbox (want: per key, every STATE_VERSION of a KAFKA_MSG event):
// each appears, nothing else does, and per key a record whose version is
// lower than one already seen repeats a version seen before — a re-send
// after a crash between commit and mark — never an older notice that was
// not yet delivered (a deposed leader's).
func AssertNotices(t testing.TB, records []Record, want map[string][]int64) {
	t.Helper()
	seen := map[string]map[int64]bool{}
	top := map[string]int64{}
	for _, r := range records {
		v := r.StateVersion()
		if seen[r.Key] == nil {
			seen[r.Key] = map[int64]bool{}
		}
		if m, ok := top[r.Key]; ok && v < m && !seen[r.Key][v] {
			t.Errorf("dispatchtest: key %s: notice version %d at %d/%d after %d, and not a re-send", r.Key, v, r.Partition, r.Offset, m)
		}
		seen[r.Key][v] = true
		top[r.Key] = max(top[r.Key], v)
	}
	got := map[string][]int64{}
	for k, vs := range seen {
		for v := range vs {
			got[k] = append(got[k], v)
		}
		slices.Sort(got[k])
	}
	norm := map[string][]int64{}
	for k, vs := range want {
		norm[k] = slices.Compact(slices.Sorted(slices.Values(vs)))
	}
	if diff := cmp.Diff(norm, got); diff != "" {
		t.Errorf("dispatchtest: notice versions per key differ from the committed ones (-committed +topic):\n%s", diff)
	}
}
