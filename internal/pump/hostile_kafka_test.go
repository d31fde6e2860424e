package pump_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
)

// The topics of the hostile corpus's feed (a kfake broker of its own).
const (
	hostileStateTopic  = "KAFKA_SCHD"
	hostileNoticeTopic = "KAFKA_MSG"
)

// drainAndDispatch drains the mailbox with a pump and its dispatcher, as
// `flightfeed pump --drain` runs them: the pump wakes the dispatcher after
// its commits and returns once every row is processed and written back
// and the dispatcher's outbox is delivered (PostgreSQL only).
func (h *harness) drainAndDispatch() {
	h.t.Helper()
	var d *dispatch.Dispatcher
	p := h.newPump(func(o *pump.Options) { o.Notify = func() { d.Notify() } })
	client, err := dispatch.NewClient(h.feed)
	if err != nil {
		h.t.Fatal(err)
	}
	d, err = dispatch.New(h.store, client, h.feed, dispatch.Options{Epoch: p.Status().Epoch,
		Renew: func() (*kgo.Client, error) { return dispatch.NewClient(h.feed) }})
	if err != nil {
		client.Close()
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { d.Client().Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dctx, stopDispatch := context.WithCancel(ctx)
	dispatched := make(chan error, 1)
	go func() { dispatched <- d.Run(dctx) }()
	drainErr := p.Drain(ctx, d.Idle)
	stopDispatch()
	if err := <-dispatched; err != nil {
		h.t.Fatalf("dispatcher: %v", err)
	}
	if drainErr != nil || ctx.Err() != nil {
		h.t.Fatalf("drain with the dispatcher: %v (ctx %v); pump %+v, dispatcher %+v", drainErr, ctx.Err(), p.Status(), d.Status())
	}
}

// checkTopics reads both topics with read_committed and checks that they
// carry exactly the outbox's records — each once, in the outbox's order
// for its FLID, the payload as the value and the version, event and day
// as headers — that the state topic converges to the export, and that no
// notice is of a message in rejected.
func checkTopics(t *testing.T, h *harness, brokers []string, rejected []int64) {
	t.Helper()
	for _, topic := range []string{hostileStateTopic, hostileNoticeTopic} {
		records := dispatchtest.Records(t, brokers, topic)
		published := map[string][]string{}
		for _, r := range records {
			published[r.Key] = append(published[r.Key], fmt.Sprintf("state-version=%s event=%s operation-day=%s %s",
				r.Headers[dispatch.HeaderStateVersion], r.Headers[dispatch.HeaderEvent], r.Headers[dispatch.HeaderOperationDay], r.Value))
		}
		committed := h.outboxRecords(topic)
		if len(committed) == 0 {
			t.Errorf("%s: the outbox holds no record for it, so the comparison proves nothing", topic)
		}
		for _, key := range sortedUnion(published, committed) {
			if got, want := published[key], committed[key]; !slices.Equal(got, want) {
				t.Errorf("%s, key %s: the topic carries\n  %s\nthe outbox holds\n  %s", topic, key,
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		}
		n := 0
		for _, rs := range committed {
			n += len(rs)
		}
		t.Logf("%s: %d outbox records compared with the topic's %d", topic, n, len(records))
		if topic != hostileNoticeTopic {
			continue
		}
		for _, r := range records {
			var doc struct {
				MsgID int64 `json:"MSG_ID"`
			}
			if err := json.Unmarshal(r.Value, &doc); err != nil || doc.MsgID == 0 {
				t.Errorf("notice %d/%d names no message: %s (%v)", r.Partition, r.Offset, r.Value, err)
			} else if slices.Contains(rejected, doc.MsgID) {
				t.Errorf("a notice of the rejected message %d: %s", doc.MsgID, r.Value)
			}
		}
	}
	var export [][]byte
	for _, line := range strings.SplitAfter(h.export(), "\n") {
		if line != "" {
			export = append(export, []byte(line))
		}
	}
	dispatchtest.AssertConverged(t, brokers, hostileStateTopic, export)
}

// outboxRecords are the outbox's records for topic (a kind of
// msg_event_record), by key (FLID), in outbox order, as checkTopics
// renders a record.
func (h *harness) outboxRecords(topic string) map[string][]string {
	h.t.Helper()
	rows, err := h.db.Query(h.t.Context(), `SELECT flid, state_version, coalesce(event, ''), coalesce(operation_day::text, ''), payload
		FROM msg_event_record WHERE kind = $1 ORDER BY id`, topic)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var flid, version int64
		var event, day, payload string
		if err := rows.Scan(&flid, &version, &event, &day, &payload); err != nil {
			h.t.Fatal(err)
		}
		key := fmt.Sprint(flid)
		out[key] = append(out[key], fmt.Sprintf("state-version=%d event=%s operation-day=%s %s", version, event, day, payload))
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

func sortedUnion(a, b map[string][]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// backendRowsOf is what a drain left on either backend, in one form for
// both: the mailbox results, the processing rows (status, reason, flags,
// attempts, identity), the flights (export) and the outbox (each record's
// kind, event, FLID, message and payload; payload versions ranked as in
// feedRowsOf), and the ledger.
func backendRowsOf(t *testing.T, h *harness) feedRows {
	t.Helper()
	var outbox strings.Builder
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.Event != "" {
					fmt.Fprintf(&outbox, "%s %s flid=%d msg=%d %s\n", engine.KindState, e.Event, e.FLID, e.MessageID, e.State)
				}
				if e.Notice != "" {
					fmt.Fprintf(&outbox, "%s %s flid=%d msg=%d %s\n", engine.KindNotice, "", e.FLID, e.MessageID, e.Notice)
				}
			}
		})
	} else {
		rows, err := h.db.Query(t.Context(), `SELECT kind, coalesce(event, ''), flid, message_id, payload FROM msg_event_record ORDER BY id, kind DESC`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var kind, event, payload string
			var flid, msg int64
			if err := rows.Scan(&kind, &event, &flid, &msg, &payload); err != nil {
				t.Fatal(err)
			}
			if kind == engine.KindNotice {
				event = ""
			}
			fmt.Fprintf(&outbox, "%s %s flid=%d msg=%d %s\n", kind, event, flid, msg, payload)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return feedRows{mailbox: h.mailboxDump(), procState: h.procDump(), ledger: h.ledger(),
		flights: rankVersions(normalize(h.export())), outbox: rankVersions(normalize(outbox.String()))}
}
