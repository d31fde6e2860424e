package mailbox_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
)

func TestMailboxRowRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("mysql", mailboxtest.NewMailbox(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()

	body := `<MSG><META><SNDR>AODB</SNDR><SEQN>42</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE></GTDT></FLOP></MSG>`
	id, err := mailbox.WriteInbound(ctx, db, mailbox.Inbound{Body: body})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}

	// The FIFO head query of processing rules R2.2 finds it with the defaults filled in.
	var (
		gotID     int64
		received  time.Time
		processed sql.NullTime
		status    string
		gotBody   string
	)
	err = db.QueryRowContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS, CMINMSGS_CLOB_MSG
		FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NULL AND CMINMSGS_STATUS = 'VALID'
		ORDER BY CMINMSGS_DATE_RECEIVED, CMINMSGS_ID LIMIT 1`).Scan(&gotID, &received, &processed, &status, &gotBody)
	if err != nil {
		t.Fatalf("read head: %v", err)
	}
	if gotID != id || gotBody != body || status != "VALID" || processed.Valid || received.IsZero() {
		t.Fatalf("head row = id %d status %s processed %v received %v body match %v", gotID, status, processed, received, gotBody == body)
	}

	// Backfill writes the result and note; the row leaves the head.
	if _, err := db.ExecContext(ctx, `UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = ?, CMINMSGS_PROC_RESULT = 'SUCCEEDED' WHERE CMINMSGS_ID = ?`,
		time.Now().UTC(), id); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NULL`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows still at the head after backfill", left)
	}

	// A note longer than the column is refused, never cut short silently.
	long := make([]byte, 513)
	for i := range long {
		long[i] = 'x'
	}
	conn, err := db.Conn(ctx) // one session, so the sql_mode below applies
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, `SET SESSION sql_mode = 'STRICT_ALL_TABLES'`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `UPDATE CMINMSGS SET CMINMSGS_PROC_NOTE = ? WHERE CMINMSGS_ID = ?`, string(long), id); err == nil {
		t.Fatal("a 513-byte note was accepted by a VARCHAR(512) column")
	}
}

func TestOutboundRequestRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("mysql", mailboxtest.NewMailbox(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, `INSERT INTO COUTMSGS (ROUTINGID, COUTMSGS_CLOB_MSG) VALUES ('AODB', '<MSG/>')`); err != nil {
		t.Fatal(err)
	}
	var sent sql.NullTime
	var flag int
	if err := db.QueryRowContext(ctx, `SELECT COUTMSGS_DATE_SENT, COUTMSGS_SENT_FLAG FROM COUTMSGS`).Scan(&sent, &flag); err != nil {
		t.Fatal(err)
	}
	if sent.Valid || flag != 0 {
		t.Fatalf("new request: date sent %v, flag %d; want NULL and 0", sent, flag)
	}
}

// WriteInbound writes several rows in one statement, in order, each with
// the received time given (or the server's), NULL when asked; the
// adapter opened with the default spec reads them back as its FIFO head,
// so the DDL, the writer and the configuration's defaults agree.
func TestWriteInboundRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, `ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT NULL`); err != nil {
		t.Fatal(err)
	}
	if id, err := mailbox.WriteInbound(ctx, db); err != nil || id != 0 {
		t.Fatalf("no rows: id %d, %v", id, err)
	}
	base := time.Date(2026, 9, 9, 10, 0, 0, 0, time.FixedZone("CST", 8*3600))
	first, err := mailbox.WriteInbound(ctx, db,
		mailbox.Inbound{Received: base, Body: "<a/>"},
		mailbox.Inbound{Received: base.Add(time.Millisecond), Null: true, Body: "ignored"},
		mailbox.Inbound{Body: "<c/>"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id       int64
		received time.Time
		status   string
		body     sql.NullString
	}
	rows, err := db.QueryContext(ctx, `SELECT CMINMSGS_ID, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS, CMINMSGS_CLOB_MSG FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.received, &r.status, &r.body); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].id != first {
		t.Fatalf("rows %+v, want 3 from id %d", got, first)
	}
	if !got[0].received.Equal(base) || !got[1].received.Equal(base.Add(time.Millisecond)) {
		t.Fatalf("received %v and %v, want %v and 1 ms later (in UTC)", got[0].received, got[1].received, base.UTC())
	}
	var serverNow time.Time
	if err := db.QueryRowContext(ctx, `SELECT CURRENT_TIMESTAMP(3)`).Scan(&serverNow); err != nil {
		t.Fatal(err)
	}
	if since := serverNow.Sub(got[2].received); since < 0 || since > time.Minute {
		t.Fatalf("a row without a received time got %v, want the server's clock (now %v)", got[2].received, serverNow)
	}
	if got[0].body.String != "<a/>" || got[1].body.Valid || got[2].body.String != "<c/>" {
		t.Fatalf("bodies %v %v %v", got[0].body, got[1].body, got[2].body)
	}
	for _, r := range got {
		if r.status != "VALID" {
			t.Fatalf("row %d status %q, want VALID", r.id, r.status)
		}
	}

	m := openDefault(t, dsn)
	head, _, err := m.Head(ctx, 10, 1<<20, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(head) != 3 || head[0].ID != first || string(head[0].Body) != "<a/>" || !head[1].Null || string(head[2].Body) != "<c/>" {
		t.Fatalf("head %+v", head)
	}
}
