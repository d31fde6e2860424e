package dispatch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// kcatBin is Debian's kcat (librdkafka), an independent client.
const kcatBin = "kcat"

// createTopics creates fresh topics on a shared broker.
func createTopics(t *testing.T, brokers []string, partitions int32, names ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, partitions, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			t.Fatalf("create topic %s: %v", rt.Topic, err)
		}
	}
}

// kcatMessage is one message of `kcat -C -J`.
type kcatMessage struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

func (m kcatMessage) header(k string) (string, bool) {
	for i := 0; i+1 < len(m.Headers); i += 2 {
		if m.Headers[i] == k {
			return m.Headers[i+1], true
		}
	}
	return "", false
}

// kcat runs kcat with args and returns its stdout.
func kcat(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path, err := exec.LookPath(kcatBin)
	if err != nil {
		t.Fatalf("kcat is not installed (`apt-get install -y kcat`, done by hack/test.sh): %v", err)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// kcatRead consumes a whole topic with kcat, as consumers must read it:
// read_committed, so records of aborted transactions are never seen.
func kcatRead(t *testing.T, broker, topic string) []kcatMessage {
	t.Helper()
	out := kcat(t, nil, "-C", "-b", broker, "-X", "isolation.level=read_committed", "-t", topic, "-o", "beginning", "-e", "-q", "-J")
	var msgs []kcatMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m kcatMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("kcat line %q: %v", sc.Text(), err)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// An independent client (kcat, librdkafka) reads what the dispatcher
// wrote to the shared test broker: the latest document per FLID
// (tombstones deleting) equals `flightfeed export` byte for byte, headers
// match the documents, and librdkafka's Java-compatible murmur2
// partitioner puts every key in the same partition as the dispatcher.
func TestKcatReadsTheTopics(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Shared(t)
	const partitions = 12
	base := fmt.Sprintf("ff-dispatch-kcat-%d", time.Now().UnixNano())
	state, notice, keyed := base+"-state", base+"-notice", base+"-keyed"
	createTopics(t, brokers, partitions, state, notice, keyed)

	e := newEnv(t)
	d := e.dispatcher(e.feed(brokers, state, notice, ""), dispatch.Options{})
	e.snapshot(
		rec(121112312, "CA100", flight.Command{Tag: "GTDT", Op: flight.OpReplace,
			Items: []flight.Item{{"GTNO": "1", "GATE": "A1", "GTYP": "D"}, {"GTNO": "3", "GATE": "B2"}}}),
		rec(121112313, "CA101", flight.Command{Tag: "DELY", Op: flight.OpReplace,
			Items: []flight.Item{{"CODE": "81", "DURA": "20", "TEXT": "流量控制 <ATC> & \"weather\""}}}),
		rec(121112314, "MU5101"),
		rec(121112315, "CZ3101"),
	)
	e.flop(121112312, "ESTT", "09SEP260930")
	e.flop(121112312, "ESTT", "09SEP260945")
	e.flop(121112316, "REMC", "新建 ADFT\tflight")
	e.fdel(121112314)
	out := e.snapshot(rec(121112312, "CA100"), rec(121112313, "CA101"))
	if len(out.Deleted) != 1 || out.Deleted[0] != 121112315 {
		t.Fatalf("diff-delete %v", out.Deleted)
	}
	deliverAll(t, d)

	export := e.export()
	dispatchtest.AssertConverged(t, brokers, state, export)

	want := map[string]string{}
	for _, line := range export {
		var doc struct{ FLID string }
		if err := json.Unmarshal(line, &doc); err != nil {
			t.Fatal(err)
		}
		want[doc.FLID] = string(line)
	}
	got := map[string]string{}
	partOf := map[string]int32{}
	msgs := kcatRead(t, brokers[0], state)
	if len(msgs) == 0 {
		t.Fatal("kcat read nothing")
	}
	for _, m := range msgs {
		if m.Key == nil || m.Payload == nil {
			t.Fatalf("kcat: null key or value: %+v", m)
		}
		var doc struct {
			FLID         string `json:"FLID"`
			StateVersion int64  `json:"STATE_VERSION"`
			OperationDay string `json:"OPERATION_DAY"`
			Deleted      bool   `json:"DELETED"`
		}
		if err := json.Unmarshal([]byte(*m.Payload), &doc); err != nil {
			t.Fatalf("kcat payload %q: %v", *m.Payload, err)
		}
		sv, _ := m.header(dispatch.HeaderStateVersion)
		ev, _ := m.header(dispatch.HeaderEvent)
		day, hasDay := m.header(dispatch.HeaderOperationDay)
		wantEv := "UPSERT"
		if doc.Deleted {
			wantEv = "DELETE"
		}
		if doc.FLID != *m.Key || sv != strconv.FormatInt(doc.StateVersion, 10) || ev != wantEv ||
			(!doc.Deleted && (day != doc.OperationDay || hasDay != (doc.OperationDay != ""))) {
			t.Errorf("kcat message %d/%d: key %s headers %v, document %s", m.Partition, m.Offset, *m.Key, m.Headers, *m.Payload)
		}
		partOf[*m.Key] = m.Partition
		if doc.Deleted {
			delete(got, *m.Key)
		} else {
			got[*m.Key] = *m.Payload
		}
	}
	if len(got) != len(want) {
		t.Errorf("kcat sees %d flights, export has %d", len(got), len(want))
	}
	for flid, doc := range want {
		if got[flid] != doc {
			t.Errorf("flight %s:\nkcat   %s\nexport %s", flid, got[flid], doc)
		}
	}
	if n := len(kcatRead(t, brokers[0], notice)); int64(n) != e.count(`SELECT count(*) FROM msg_event_record WHERE kind = 'KAFKA_MSG'`) {
		t.Errorf("kcat reads %d notices", n)
	}

	// librdkafka's murmur2 partitioner (Java-compatible) agrees with the
	// dispatcher on its keys, and with this test's murmur2 on many more.
	var lines bytes.Buffer
	for key := range partOf {
		fmt.Fprintf(&lines, "%s\tx\n", key)
	}
	for i := range 200 {
		fmt.Fprintf(&lines, "%d\tx\n", 900000000+i*104729)
	}
	kcat(t, lines.Bytes(), "-P", "-b", brokers[0], "-t", keyed, "-K", "\t", "-X", "partitioner=murmur2_random")
	theirs := dispatchtest.Records(t, brokers, keyed)
	if len(theirs) != len(partOf)+200 {
		t.Fatalf("%d records produced by kcat, want %d", len(theirs), len(partOf)+200)
	}
	for _, r := range theirs {
		if p, ok := partOf[r.Key]; ok && r.Partition != p {
			t.Errorf("key %s: librdkafka murmur2 chose partition %d, the dispatcher %d", r.Key, r.Partition, p)
		}
		if want := javaPartition([]byte(r.Key), partitions); r.Partition != want {
			t.Errorf("key %s: librdkafka murmur2 chose partition %d, murmur2 here %d", r.Key, r.Partition, want)
		}
	}
}
