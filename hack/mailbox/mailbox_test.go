package mailbox_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/testsupport/mysqltest"
)

func TestMailboxRowRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("mysql", mysqltest.NewMailbox(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()

	body := `<MSG><META><SNDR>AODB</SNDR><SEQN>42</SEQN><DDTM>20260909101500</DDTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>` +
		`<FLOP><FLID>121112312</FLID><GTDT GTNO="1"><GATE>A1</GATE></GTDT></FLOP></MSG>`
	res, err := db.ExecContext(ctx, `INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG) VALUES (?)`, body)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}

	// The FIFO head query of SPEC §3.2 finds it with the defaults filled in.
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
	db, err := sql.Open("mysql", mysqltest.NewMailbox(t))
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
