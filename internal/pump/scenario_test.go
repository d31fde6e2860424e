package pump_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/testsupport/golden"
)

// flopFor renders a FLOP of subtype tag for flid that sets the field.
func (h *harness) flopFor(spec flight.FieldSpec, flid int) string {
	tag := spec.Tag
	switch spec.Kind {
	case flight.KindScalar:
		v := "V-" + tag
		if spec.TypedTimeColumn != "" {
			v = "09SEP261200"
		}
		return h.flop(tag, flid, fmt.Sprintf("<%s>%s</%s>", tag, v, tag))
	case flight.KindCollection:
		attr := ""
		if spec.SeqAttr != "" {
			attr = fmt.Sprintf(` %s="1"`, spec.SeqAttr)
		}
		child := "<X-UNMAPPED>kept</X-UNMAPPED>"
		for _, c := range spec.ItemColumns {
			child += fmt.Sprintf("<%s>%s-%s</%s>", c, tag, c, c)
		}
		return h.flop(tag, flid, fmt.Sprintf("<%s%s>%s</%s>", tag, attr, child, tag))
	case flight.KindAnomaly:
		return h.flop(tag, flid, fmt.Sprintf(`<%s DDES="HKG" DDIR="TO">why %s</%s>`, tag, tag, tag))
	default:
		return h.flop(tag, flid, fmt.Sprintf(`<%s><ITEM>one</ITEM></%s>`, tag, tag))
	}
}

// One operation day end to end through the mailbox: a request answered
// by RESP, three snapshots, a FLOP of every kind, FDEL, ADFT, a re-sent
// duplicate, a SEQN wrap and five malformed rows (playOperationDay). What
// it leaves is compared with golden files, one concern per subtest.
func TestScenarioOneOperationDay(t *testing.T) {
	eachBackend(t, scenarioOneOperationDay, "requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 1h, routingId: AODB}")
}

func scenarioOneOperationDay(t *testing.T, h *harness) {
	h.playOperationDay()
	for _, c := range []struct{ concern, golden, got string }{
		{"flights as exported", "scenario.export.jsonl", normalize(h.export())},
		{"ledger: rosters and versions", "scenario.ledger.jsonl", h.ledger()},
		{"outbox: the events of every change", "scenario.outbox.jsonl", normalize(h.outboxDump())},
		{"mailbox: results written back", "scenario.mailbox.txt", h.mailboxDump()},
		{"requests and the answers that completed them", "scenario.requests.txt", normalize(h.requestsDump())},
		{"processing states: reasons, flags, attempts", "scenario.proc_state.txt", h.procDump()},
	} {
		t.Run(c.concern, func(t *testing.T) { golden.Equal(t, c.golden, []byte(c.got)) })
	}
}

// playOperationDay puts the operation day's messages into the mailbox and
// drains them with one pump, which sends the 9/9 request first.
func (h *harness) playOperationDay() {
	p := h.newPump()
	h.drain(p)

	h.put(h.schd("RESP", fltr(1, "CA1", "09"), fltr(2, "CA2", "09"), fltr(3, "CA3", "09")))
	for _, spec := range flight.Fields() {
		h.put(h.flopFor(spec, 1))
	}
	h.put(h.flop("FDEL", 3, ""))
	h.put(`<MSG>` + h.meta("SCHD", "ADFT") + `<SCHD><RECS>1</RECS>` + fltr(4, "CA4", "09") + `</SCHD></MSG>`)
	dup := h.flop("ESTT", 2, "<ESTT>09SEP260915</ESTT>")
	h.put(dup)
	h.put(dup)
	h.put(strings.Replace(h.flop("ACTT", 2, "<ACTT>09SEP260920</ACTT>"), fmt.Sprintf("<SEQN>%d</SEQN>", h.seqn+100), "<SEQN>999999</SEQN>", 1))
	h.put(strings.Replace(h.flop("ACTT", 2, "<ACTT>09SEP260921</ACTT>"), fmt.Sprintf("<SEQN>%d</SEQN>", h.seqn+100), "<SEQN>1</SEQN>", 1))
	for _, bad := range []string{
		`<MSG><META>`,
		strings.Replace(h.schd("RESP", fltr(5, "X", "09")), "<RECS>1</RECS>", "<RECS>3</RECS>", 1),
		strings.Replace(h.flop("ESTT", 5, "<ESTT>x</ESTT>"), "<FLID>5</FLID>", "<FLID>ABC</FLID>", 1),
		h.flop("GTDT", 5, `<GTDT GTNO="0"/><GTDT GTNO="2"><GATE>B</GATE></GTDT>`),
		h.schd("RESP", strings.Replace(fltr(5, "X", "09"), "09SEP260800", "31FOO260800", 1)),
	} {
		h.put(bad)
	}
	// Second snapshot of the day: 2 is gone, 4 (ADFT, NULL day) joins.
	h.put(h.schd("RESP", fltr(1, "CA1", "09"), fltr(4, "CA4", "09")))
	// Third: the same roster again.
	h.put(h.schd("RESP", fltr(1, "CA1", "09"), fltr(4, "CA4-B", "09")))
	h.drain(p)
}

func (h *harness) procDump() string {
	h.t.Helper()
	if h.mem != nil {
		var b strings.Builder
		h.mem.View(func(d pumptest.Data) {
			for _, id := range slices.Sorted(maps.Keys(d.States)) {
				st, r := d.States[id], d.Results[id]
				flags := r.Flags
				if flags == nil {
					flags = []string{}
				}
				fmt.Fprintf(&b, "%d %s %s flags=%v attempts=%d %s\n", id, st.Status, st.Reason, flags, st.Attempts, r.IdentityKey)
			}
		})
		return b.String()
	}
	rows, err := h.db.Query(h.t.Context(), `SELECT message_id, status, coalesce(reason, ''), flags, attempts, coalesce(identity_key, '') FROM proc_state ORDER BY message_id`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var status, reason, key string
		var flags []string
		var attempts int
		if err := rows.Scan(&id, &status, &reason, &flags, &attempts, &key); err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s %s flags=%v attempts=%d %s\n", id, status, reason, flags, attempts, key)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return b.String()
}

var volatile = regexp.MustCompile(`"UPDATED_AT":"[^"]*"|<DDTM>\d+</DDTM>`)

func normalize(s string) string { return volatile.ReplaceAllString(s, "<time>") }

func (h *harness) ledger() string {
	h.t.Helper()
	if h.mem != nil {
		var b strings.Builder
		h.mem.View(func(data pumptest.Data) {
			for _, day := range slices.Sorted(maps.Keys(data.Days)) {
				d := data.Days[day]
				fmt.Fprintf(&b, `{"day":%q,"version":%d,"last_message_id":%d,"flights":%d}`+"\n", day, d.Version, d.LastMessageID, len(d.Roster))
			}
		})
		return b.String()
	}
	days, err := h.store.Ledger(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	var b strings.Builder
	for _, d := range days {
		fmt.Fprintf(&b, `{"day":%q,"version":%d,"last_message_id":%d,"flights":%d}`+"\n", d.Day, d.Version, d.LastMessageID, d.Flights)
	}
	return b.String()
}

func (h *harness) outboxDump() string {
	h.t.Helper()
	if h.mem != nil {
		// Nothing delivers here: every record is PENDING, as in the
		// database without a dispatcher.
		var b strings.Builder
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.Event != "" {
					fmt.Fprintf(&b, "%s %s flid=%d v=%d msg=%d PENDING %s\n", engine.KindState, e.Event, e.FLID, e.Version, e.MessageID, e.State)
				}
				if e.Notice != "" {
					fmt.Fprintf(&b, "%s NOTICE flid=%d v=%d msg=%d PENDING %s\n", engine.KindNotice, e.FLID, e.Version, e.MessageID, e.Notice)
				}
			}
		})
		return b.String()
	}
	rows, err := h.db.Query(h.t.Context(), `SELECT kind, event, flid, state_version, message_id,
		CASE WHEN (id, kind) IN (SELECT event_id, kind FROM msg_event_parked) THEN 'PARKED'
			WHEN id <= (SELECT delivered_id FROM msg_event_cursor) THEN 'DELIVERED' ELSE 'PENDING' END, payload
		FROM msg_event_record ORDER BY id, kind DESC`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var kind, event, status, payload string
		var flid, version, msg int64
		if err := rows.Scan(&kind, &event, &flid, &version, &msg, &status, &payload); err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s flid=%d v=%d msg=%d %s %s\n", kind, event, flid, version, msg, status, payload)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return b.String()
}

func (h *harness) mailboxDump() string {
	h.t.Helper()
	if h.inbox != nil {
		h.inbox.Lock()
		defer h.inbox.Unlock()
		var b strings.Builder
		for _, r := range h.inbox.Rows {
			res, processed := h.inbox.Results[r.ID]
			fmt.Fprintf(&b, "%d processed=%v %s %s\n", r.ID, processed, res.Result, res.Note)
		}
		return b.String()
	}
	return mailboxtest.Results(h.t, h.mbox)
}

func (h *harness) requestsDump() string {
	h.t.Helper()
	var b strings.Builder
	for _, o := range h.outbound() {
		fmt.Fprintf(&b, "outbound %d %s %s\n", o.ID, o.Routing, o.Body)
	}
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Requests {
				fmt.Fprintf(&b, "request %s seqn=%d %s completed_by=%d\n", r.Day, r.Seqn, r.Status, d.Answers[r.ID].MessageID)
			}
		})
		return b.String()
	}
	rows, err := h.db.Query(h.t.Context(), `SELECT operation_day::text, seqn, status, coalesce(completed_by, 0) FROM req_track ORDER BY id`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var day, status string
		var seqn int
		var by int64
		if err := rows.Scan(&day, &seqn, &status, &by); err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(&b, "request %s seqn=%d %s completed_by=%d\n", day, seqn, status, by)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return b.String()
}
