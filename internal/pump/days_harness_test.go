package pump_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/engine"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/store"
)

// What the database holds of days, history and snapshot traces, on either
// backend (harness_test.go has the rest).

// ledgerDay is a day of the ledger: its version and roster size (0, 0
// when the ledger has no such day).
type ledgerDay struct{ Version, Roster int }

func (h *harness) ledgerDay(day string) ledgerDay {
	h.t.Helper()
	if h.mem != nil {
		var d pumptest.Day
		h.mem.View(func(data pumptest.Data) { d = data.Days[day] })
		return ledgerDay{int(d.Version), len(d.Roster)}
	}
	var v int
	err := h.db.QueryRow(context.Background(), `SELECT version FROM schd_gen WHERE operation_day = $1::date`, day).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledgerDay{}
	}
	if err != nil {
		h.t.Fatalf("schd_gen %s: %v", day, err)
	}
	return ledgerDay{v, h.count(`SELECT count(*) FROM schd_gen_flid WHERE operation_day = $1::date`, day)}
}

// ledgerDays is the number of days in the ledger.
func (h *harness) ledgerDays() int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) { n = len(d.Days) })
		return n
	}
	return h.count(`SELECT count(*) FROM schd_gen`)
}

// traceRow is a trace row: its result, flags and detail.
type traceRow struct {
	Result string
	Flags  []string
	Detail string
}

// traced lists the trace rows of message id in the order written.
func (h *harness) traced(id int64) []traceRow {
	h.t.Helper()
	var out []traceRow
	if h.mem != nil {
		for _, e := range h.mem.Traces() {
			if e.MessageID == id {
				out = append(out, traceRow{e.Result, e.Flags, e.Detail})
			}
		}
		return out
	}
	rows, err := h.db.Query(context.Background(), `SELECT result, flags, coalesce(detail, '') FROM schd_snap_log WHERE msg_id = $1 ORDER BY id`, id)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r traceRow
		if err := rows.Scan(&r.Result, &r.Flags, &r.Detail); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// traceCount is the number of message id's trace rows with result and,
// unless flag is "", that flag.
func (h *harness) traceCount(id int64, result, flag string) int {
	h.t.Helper()
	n := 0
	for _, r := range h.traced(id) {
		if r.Result == result && (flag == "" || slices.Contains(r.Flags, flag)) {
			n++
		}
	}
	return n
}

// flaggedTraces is the number of trace rows, of any message, with flag.
func (h *harness) flaggedTraces(flag string) int {
	h.t.Helper()
	if h.mem != nil {
		n := 0
		for _, e := range h.mem.Traces() {
			if slices.Contains(e.Flags, flag) {
				n++
			}
		}
		return n
	}
	return h.count(`SELECT count(*) FROM schd_snap_log WHERE $1 = ANY(flags)`, flag)
}

// history is what flight_history holds of flid: each row's reason and the
// canonical JSON of the state it keeps.
func (h *harness) history(flid flight.FLID) (reasons, states []string) {
	h.t.Helper()
	if h.mem != nil {
		var rows []pumptest.HistoryRow
		h.mem.View(func(d pumptest.Data) { rows = slices.Clone(d.History) })
		for _, r := range rows {
			if r.State.FLID != flid {
				continue
			}
			doc, err := flight.CanonicalJSON(r.State)
			if err != nil {
				h.t.Fatal(err)
			}
			reasons, states = append(reasons, r.Reason), append(states, string(doc))
		}
		return reasons, states
	}
	rows, err := h.db.Query(context.Background(), `SELECT reason, state::text FROM flight_history WHERE flid = $1 ORDER BY archived_at`, int64(flid))
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var reason, state string
		if err := rows.Scan(&reason, &state); err != nil {
			h.t.Fatal(err)
		}
		reasons, states = append(reasons, reason), append(states, state)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return reasons, states
}

// tombstones is the number of outbox rows deleting flid.
func (h *harness) tombstones(flid flight.FLID) int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.FLID == flid && e.Event == engine.EventDelete {
					n++
				}
			}
		})
		return n
	}
	return h.count(`SELECT count(*) FROM msg_event WHERE flid = $1 AND event = $2`, int64(flid), engine.EventDelete)
}

// setStoredDay gives flid's stored row another operation day behind the
// pump's back (data pollution: the ledger and the flight's row disagree).
func (h *harness) setStoredDay(flid flight.FLID, day string) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Update(func(d *pumptest.Data) {
			s := d.Flights[flid]
			s.OperationDay = day
			d.Flights[flid] = s
		})
		return
	}
	for _, sql := range []string{
		`ALTER TABLE flight_schd DISABLE TRIGGER flight_schd_guard`,
		fmt.Sprintf(`UPDATE flight_schd SET operation_day = '%s' WHERE flid = %d`, day, flid),
		`ALTER TABLE flight_schd ENABLE TRIGGER flight_schd_guard`,
	} {
		if _, err := h.db.Exec(h.t.Context(), sql); err != nil {
			h.t.Fatalf("%s: %v", sql, err)
		}
	}
}

// truncateMailbox empties the mailbox as TRUNCATE TABLE CMINMSGS does: the
// next row written gets id 1 again.
func (h *harness) truncateMailbox() {
	h.t.Helper()
	if h.inbox != nil {
		h.inbox.Lock()
		h.inbox.Rows, h.inbox.Results = nil, map[int64]pumpdata.Backfill{}
		h.inbox.Unlock()
		return
	}
	if _, err := h.mbox.Exec(`TRUNCATE TABLE CMINMSGS`); err != nil {
		h.t.Fatal(err)
	}
}

// requestReplay records a PENDING replay request for message id, as
// `flightfeed replay` does.
func (h *harness) requestReplay(id int64, policy string) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.RequestReplay(id, policy)
		return
	}
	st, err := store.Open(context.Background(), h.feed.Secrets.DatabaseDSN, store.Options{Location: h.feed.Location, Clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RequestReplay(h.t.Context(), id, policy); err != nil {
		h.t.Fatal(err)
	}
}

// replaysDone is the number of DONE replay requests whose result and
// reason are these ("": any).
func (h *harness) replaysDone(result, reason string) int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Replays {
				if r.State == pumpdata.ReplayDone && (result == "" || r.Result == result) && (reason == "" || r.Reason == reason) {
					n++
				}
			}
		})
		return n
	}
	return h.count(`SELECT count(*) FROM replay_request WHERE state = 'DONE' AND ($1 = '' OR result = $1) AND ($2 = '' OR reason = $2)`, result, reason)
}

// replayOf is the newest replay request of message id (zero when none).
func (h *harness) replayOf(id int64) pumpdata.ReplayRequest {
	h.t.Helper()
	var out pumpdata.ReplayRequest
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Replays {
				if r.MessageID == id && r.ID > out.ID {
					out = r
				}
			}
		})
		return out
	}
	var rid int64
	if err := h.db.QueryRow(h.t.Context(), `SELECT coalesce(max(id), 0) FROM replay_request WHERE message_id = $1`, id).Scan(&rid); err != nil {
		h.t.Fatal(err)
	}
	if rid == 0 {
		return out
	}
	out, err := h.store.Replay(h.t.Context(), rid)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// failTraceWrites makes every trace row fail to be written (the table
// gone).
func (h *harness) failTraceWrites() {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Fail(&pumptest.Fault{Call: "trace", Err: errors.New(`relation "schd_snap_log" does not exist`)})
		return
	}
	if _, err := h.db.Exec(h.t.Context(), `ALTER TABLE schd_snap_log RENAME TO schd_snap_log_away`); err != nil {
		h.t.Fatal(err)
	}
}

// answeredBy is the message that completed the request of day (0: none).
func (h *harness) answeredBy(day string) int64 {
	h.t.Helper()
	if h.mem != nil {
		var by int64
		h.mem.View(func(d pumptest.Data) {
			for _, r := range d.Requests {
				if r.Day == day && r.Status == pumpdata.RequestCompleted {
					by = d.Answers[r.ID].MessageID
				}
			}
		})
		return by
	}
	var by int64
	err := h.db.QueryRow(h.t.Context(), `SELECT coalesce(max(completed_by), 0) FROM req_track WHERE operation_day = $1::date AND status = 'COMPLETED'`, day).Scan(&by)
	if err != nil {
		h.t.Fatal(err)
	}
	return by
}

// recordKinds is the number of Kafka records in the outbox: flight states
// (and tombstones), and notices.
func (h *harness) recordKinds() (states, notices int) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if e.Event != "" {
					states++
				}
				if e.Notice != "" {
					notices++
				}
			}
		})
		return states, notices
	}
	return h.count(`SELECT count(*) FROM msg_event_record WHERE kind = $1`, engine.KindState),
		h.count(`SELECT count(*) FROM msg_event_record WHERE kind = $1`, engine.KindNotice)
}
