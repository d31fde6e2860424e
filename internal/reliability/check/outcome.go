package check

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/store"
)

// MailboxRow is one CMINMSGS row's result as the pump wrote it back
// (DATE_PROCESSED itself is a time and differs between runs).
type MailboxRow struct {
	ID        int64
	Processed bool
	Result    string
	Note      string
}

// Outcome is everything a drained feed leaves behind that a client can
// see.
type Outcome struct {
	// Export maps FLID to its `flightfeed export` line.
	Export map[string]string
	// Ledger is `flightfeed ledger`, line by line.
	Ledger  []string
	Mailbox []MailboxRow
	// ProcState is each message's processing record, one line per message
	// in id order: "id status reason note flags".
	ProcState []string
	// State and Notice are every committed record of the two topics
	// (read_committed), in partition and offset order.
	State, Notice []dispatchtest.Record
	// OutboxPending and OutboxParked are the store's counts of outbox
	// events not yet delivered and parked (store.OutboxFigures);
	// BackfillPending counts the messages whose result is committed but
	// not written back (a backfill intent left, store.CountBackfills).
	OutboxPending, OutboxParked, BackfillPending int64
}

// Read collects f's outcome. The feed must be at rest (its pump exited).
func Read(t testing.TB, f Feed) Outcome {
	t.Helper()
	o := Outcome{Export: map[string]string{}}
	for i, line := range lines(f.Run(t, "export")) {
		var doc struct {
			FLID string `json:"FLID"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil || doc.FLID == "" {
			t.Fatalf("%s: export line %d has no FLID (%v): %s", f.Name, i+1, err, line)
		}
		if _, dup := o.Export[doc.FLID]; dup {
			t.Errorf("%s: export has FLID %s twice", f.Name, doc.FLID)
		}
		o.Export[doc.FLID] = line
	}
	o.Ledger = lines(f.Run(t, "ledger"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if o.Mailbox, err = mailboxRows(ctx, f.MailboxDSN); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	if o.ProcState, err = procState(ctx, f.DatabaseDSN); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	st, err := store.Open(ctx, f.DatabaseDSN, store.Options{ReadOnly: true, MaxConns: 1})
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	defer st.Close()
	if o.OutboxPending, o.OutboxParked, _, err = st.OutboxFigures(ctx); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	if o.BackfillPending, err = st.CountBackfills(ctx); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	state, notice := f.topics()
	o.State = dispatchtest.Records(t, f.Brokers, state)
	o.Notice = dispatchtest.Records(t, f.Brokers, notice)
	return o
}

func mailboxRows(ctx context.Context, dsn string) ([]MailboxRow, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("open the mailbox: %w", err)
	}
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_DATE_PROCESSED IS NOT NULL,
		coalesce(CMINMSGS_PROC_RESULT, ''), coalesce(CMINMSGS_PROC_NOTE, '') FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		return nil, fmt.Errorf("read the mailbox results: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []MailboxRow
	for rows.Next() {
		var r MailboxRow
		if err := rows.Scan(&r.ID, &r.Processed, &r.Result, &r.Note); err != nil {
			return nil, fmt.Errorf("read the mailbox results: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the mailbox results: %w", err)
	}
	return out, nil
}

func procState(ctx context.Context, dsn string) ([]string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to the state database: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	rows, err := conn.Query(ctx, `SELECT format('%s %s %s %s %s', message_id, status, coalesce(reason, ''), coalesce(note, ''), flags)
		FROM proc_state ORDER BY message_id`)
	if err != nil {
		return nil, fmt.Errorf("read proc_state: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read proc_state: %w", err)
	}
	return out, nil
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
