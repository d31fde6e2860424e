package mailbox_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// written is what a mailbox row holds of its result.
type written struct {
	Processed    string
	Result, Note sql.NullString
}

func writtenRows(t *testing.T, db *sql.DB) map[int64]written {
	t.Helper()
	rows, err := db.Query(`SELECT CMINMSGS_ID, COALESCE(DATE_FORMAT(CMINMSGS_DATE_PROCESSED, '%Y-%m-%d %H:%i:%s.%f'), ''),
		CMINMSGS_PROC_RESULT, CMINMSGS_PROC_NOTE FROM CMINMSGS`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[int64]written{}
	for rows.Next() {
		var id int64
		var w written
		if err := rows.Scan(&id, &w.Processed, &w.Result, &w.Note); err != nil {
			t.Fatal(err)
		}
		out[id] = w
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// heads returns the ids and received times of the rows at the head.
func heads(t *testing.T, m *mailbox.Mailbox, n int) []mailbox.Row {
	t.Helper()
	rows, _, err := m.Head(t.Context(), n, 1<<20, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows at the head, want %d", len(rows), n)
	}
	return rows
}

// Every row gets exactly its own result, note and processed time, however
// the values repeat and in whatever order the results come; a result
// whose received time is not the row's (the id was reused) and one whose
// row is gone change nothing; a row written before is written again.
func TestBackfillWritesEachRowItsOwnResult(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	m := openDefault(t, dsn)
	mailboxtest.Write(t, db, mailboxtest.Bodies("a", "b", "c", "d", "e", "f", "g", "h", "i")...)
	rows := heads(t, m, 9)
	t1 := time.Date(2026, 12, 6, 10, 0, 0, 123_000_000, time.UTC)
	t2, t3 := t1.Add(time.Second), t1.Add(2*time.Hour)
	long := strings.Repeat("é", mailbox.NoteMaxChars+10)
	result := func(i int, res, note string, at time.Time) pumpdata.Backfill {
		return pumpdata.Backfill{MessageID: rows[i].ID, Received: rows[i].Received, Result: res, Note: note, Processed: at}
	}
	// Written before, then again: the second write is what stays.
	if err := m.Backfill(t.Context(), []pumpdata.Backfill{result(8, pumpdata.StatusDead, "first", t1)}); err != nil {
		t.Fatal(err)
	}
	reused := result(6, pumpdata.StatusDead, "for the row before the ids restarted", t3)
	reused.Received = rows[6].Received.Add(-time.Hour)
	gone := pumpdata.Backfill{MessageID: rows[8].ID + 100, Received: rows[0].Received, Result: pumpdata.StatusDead, Processed: t3}
	results := []pumpdata.Backfill{
		result(3, pumpdata.StatusSucceeded, "", t2),
		result(0, pumpdata.StatusSucceeded, "", t1),
		reused,
		result(1, pumpdata.StatusSucceeded, "", t1),
		result(5, pumpdata.StatusSkipped, "older version", t2),
		result(2, pumpdata.StatusDead, "MALFORMED_XML: 首都", t1),
		gone,
		result(4, pumpdata.StatusSucceeded, long, t2),
		result(7, pumpdata.StatusSucceeded, "", t3),
		result(8, pumpdata.StatusSucceeded, "", t3),
	}
	if err := m.Backfill(t.Context(), results); err != nil {
		t.Fatal(err)
	}
	str := func(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
	at := func(t time.Time) string { return t.Format("2006-01-02 15:04:05.000000") }
	want := map[int64]written{
		rows[0].ID: {at(t1), str("SUCCEEDED"), str("")},
		rows[1].ID: {at(t1), str("SUCCEEDED"), str("")},
		rows[2].ID: {at(t1), str("DEAD"), str("MALFORMED_XML: 首都")},
		rows[3].ID: {at(t2), str("SUCCEEDED"), str("")},
		rows[4].ID: {at(t2), str("SUCCEEDED"), str(mailbox.FitNote(long))},
		rows[5].ID: {at(t2), str("SKIPPED"), str("older version")},
		rows[6].ID: {"", str(""), str("")},
		rows[7].ID: {at(t3), str("SUCCEEDED"), str("")},
		rows[8].ID: {at(t3), str("SUCCEEDED"), str("")},
	}
	if got := writtenRows(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows written:\n got %v\nwant %v", got, want)
	}
}

// The same row twice in one write-back (a result written again beside a
// newer one): the later result is what the row keeps, and a result for
// the same id with another received time touches nothing.
func TestBackfillOfAnIDTwiceKeepsTheLaterResult(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	m := openDefault(t, dsn)
	mailboxtest.Write(t, db, mailboxtest.Bodies("a", "b")...)
	rows := heads(t, m, 2)
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	b := func(i int, res string, recv time.Time) pumpdata.Backfill {
		return pumpdata.Backfill{MessageID: rows[i].ID, Received: recv, Result: res, Processed: at}
	}
	err = m.Backfill(t.Context(), []pumpdata.Backfill{
		b(0, pumpdata.StatusDead, rows[0].Received),
		b(1, pumpdata.StatusDead, rows[1].Received),
		b(0, pumpdata.StatusSucceeded, rows[0].Received),
		b(1, pumpdata.StatusSkipped, rows[1].Received.Add(time.Second)),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := writtenRows(t, db)
	if r0, r1 := got[rows[0].ID].Result.String, got[rows[1].ID].Result.String; r0 != "SUCCEEDED" || r1 != "DEAD" {
		t.Fatalf("results %s and %s, want SUCCEEDED (the later) and DEAD (the other received time is another row's)", r0, r1)
	}
}

// status reads counters of the one session of db (pinned to one
// connection).
func status(t *testing.T, db *sql.DB, names ...string) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SHOW SESSION STATUS WHERE Variable_name IN ('` + strings.Join(names, "','") + `')`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// serverWork returns the session counters names moved by call, less what
// reading them moves (the difference of two readings with nothing
// between).
func serverWork(t *testing.T, m *mailbox.Mailbox, call func(), names ...string) map[string]int64 {
	t.Helper()
	db := mailbox.DB(m)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	a := status(t, db, names...)
	b := status(t, db, names...)
	call()
	c := status(t, db, names...)
	out := map[string]int64{}
	for _, n := range names {
		out[n] = (c[n] - b[n]) - (b[n] - a[n])
	}
	return out
}

// The write-back is one single-table UPDATE: each row found once by its
// primary key and updated in place. The join with a derived table of the
// values it replaces made the server parse a SELECT per row, build a
// temporary table of them and read every row a second time to update it
// (twice the server's CPU a message).
func TestBackfillUpdatesEachRowOnceWithoutATemporaryTable(t *testing.T) {
	const n = 50
	m := numberedMailbox(t, n)
	rows := heads(t, m, n)
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	results := make([]pumpdata.Backfill, n)
	for i, r := range rows {
		results[i] = pumpdata.Backfill{MessageID: r.ID, Received: r.Received, Result: pumpdata.StatusSucceeded, Processed: at}
		if i%7 == 0 {
			results[i].Result, results[i].Note = pumpdata.StatusDead, fmt.Sprintf("note %d", i)
		}
	}
	got := serverWork(t, m, func() {
		if err := m.Backfill(t.Context(), results); err != nil {
			t.Fatal(err)
		}
	}, "Com_update", "Com_update_multi", "Handler_update", "Handler_read_rnd", "Handler_tmp_write")
	want := map[string]int64{"Com_update": 1, "Com_update_multi": 0, "Handler_update": n, "Handler_read_rnd": 0, "Handler_tmp_write": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("server work of a write-back of %d rows: %v, want %v", n, got, want)
	}
	if left, _, err := m.Depth(t.Context()); err != nil || left != 0 {
		t.Fatalf("%d rows left at the head (%v)", left, err)
	}
}

// A head read leaves out the rows being applied as it walks the FIFO
// index, without reading them, and brings small bodies along: each row
// taken is read once. Before, a read ahead read the sizes of the rows it
// skipped too (twice the rows for a full batch), then every body again
// by id.
func TestHeadReadsEachRowTakenOnce(t *testing.T) {
	const n = 100
	m := numberedMailbox(t, 2*n)
	applying := heads(t, m, n)
	skip := map[int64]bool{}
	for _, r := range applying {
		skip[r.ID] = true
	}
	var next []mailbox.Row
	got := serverWork(t, m, func() {
		var err error
		if next, _, err = m.Head(t.Context(), n, 1<<20, 1<<20, skip); err != nil {
			t.Fatal(err)
		}
	}, "Com_select", "Rows_read")
	if len(next) != n || next[0].ID != applying[n-1].ID+1 || string(next[0].Body) != fmt.Sprintf("<MSG>%d</MSG>", n) || string(next[n-1].Body) != fmt.Sprintf("<MSG>%d</MSG>", 2*n-1) {
		t.Fatalf("read ahead: %d rows from id %d", len(next), next[0].ID)
	}
	// One statement, which reads the rows taken and no other.
	if got["Com_select"] != 1 || got["Rows_read"] != n {
		t.Fatalf("server work of a read ahead of %d rows beside %d: %v", n, n, got)
	}
}

// Bodies larger than the head's share of the budget (budget/limit each)
// are read by id after the head, up to maxBytes; smaller ones come with
// it: sizes, bodies, NULL bodies and cuts are the same either way.
func TestHeadReadsLargeBodiesApart(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT NULL`); err != nil {
		t.Fatal(err)
	}
	small, mid, large := "<MSG/>", strings.Repeat("m", 300), strings.Repeat("L", 5000)
	mailboxtest.Write(t, db, mailbox.Inbound{Body: small}, mailbox.Inbound{Body: mid}, mailbox.Inbound{Null: true},
		mailbox.Inbound{Body: ""}, mailbox.Inbound{Body: large}, mailbox.Inbound{Body: small})
	m := openDefault(t, dsn)
	// 6 rows in a budget of 1,200 bytes: 200 bytes each come with the head.
	rows, _, err := m.Head(t.Context(), 6, 1200, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Size            int64
		Body            string
		Null, Truncated bool
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Size, string(r.Body), r.Null, r.Truncated})
	}
	// The first four fit (6 + 300 + 0 + 0 bytes); the large one, cut to
	// 1,000 bytes, would not.
	want := []row{{6, small, false, false}, {300, mid, false, false}, {0, "", true, false}, {0, "", false, false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("head:\n got %v\nwant %v", got, want)
	}
	// A fresh read always takes its first row: the large one, cut.
	if _, err := db.Exec(`UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = NOW() WHERE CMINMSGS_CLOB_MSG IS NULL OR LENGTH(CMINMSGS_CLOB_MSG) < 5000`); err != nil {
		t.Fatal(err)
	}
	rows, _, err = m.Head(t.Context(), 6, 1200, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Size != 5000 || !rows[0].Truncated || string(rows[0].Body) != large[:1000] {
		t.Fatalf("head of a large row: %d rows, first %d bytes of %d, truncated %v", len(rows), len(rows[0].Body), rows[0].Size, rows[0].Truncated)
	}
}

// The grants docs/first-feed.md gives the feed's mailbox account (SELECT
// on the inbound table, UPDATE of its three result columns) are enough
// for the head and the write-back.
func TestTheDocumentedGrantsSuffice(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	mailboxtest.Write(t, db, mailboxtest.Bodies("<MSG>a</MSG>", "<MSG>b</MSG>")...)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mailboxtest.Server())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	user := "ffgrant" + strings.ToLower(rand.Text()[:6])
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), "DROP USER IF EXISTS '"+user+"'@'%', '"+user+"'@'localhost'")
	})
	for _, host := range []string{"%", "localhost"} {
		for _, stmt := range []string{
			"CREATE USER '" + user + "'@'" + host + "' IDENTIFIED BY 'pw'",
			"GRANT SELECT, UPDATE (CMINMSGS_DATE_PROCESSED, CMINMSGS_PROC_RESULT, CMINMSGS_PROC_NOTE) ON `" + cfg.DBName + "`.CMINMSGS TO '" + user + "'@'" + host + "'",
		} {
			if _, err := admin.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg.User, cfg.Passwd = user, "pw"
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	m, err := mailbox.Open(t.Context(), cfg.FormatDSN(), spec.Mailbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	applying := heads(t, m, 1)
	next, _, err := m.Head(t.Context(), 1, 1<<20, 1<<20, map[int64]bool{applying[0].ID: true})
	if err != nil || len(next) != 1 {
		t.Fatalf("read ahead: %v rows, %v", len(next), err)
	}
	at := time.Now()
	err = m.Backfill(t.Context(), []pumpdata.Backfill{
		{MessageID: applying[0].ID, Received: applying[0].Received, Result: pumpdata.StatusSucceeded, Processed: at},
		{MessageID: next[0].ID, Received: next[0].Received, Result: pumpdata.StatusDead, Note: "bad", Processed: at.Add(time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mailboxtest.ProcessedRows(t, db, "grants"); got != 2 {
		t.Fatalf("%d rows processed, want 2", got)
	}
}

// A write-back of one row (a quiet feed's batch of one) finds it by
// primary key. MariaDB uses the key for a row constructor's IN only with
// two or more pairs: one pair alone scanned the whole table, every row the
// mailbox ever held, once per message.
func TestBackfillOfOneRowReadsOnlyIt(t *testing.T) {
	const n = 200
	m := numberedMailbox(t, n)
	rows := heads(t, m, n)
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	r := rows[n/2]
	got := serverWork(t, m, func() {
		if err := m.Backfill(t.Context(), []pumpdata.Backfill{{MessageID: r.ID, Received: r.Received, Result: pumpdata.StatusSucceeded, Processed: at}}); err != nil {
			t.Fatal(err)
		}
	}, "Handler_update", "Handler_read_rnd_next", "Handler_read_next")
	want := map[string]int64{"Handler_update": 1, "Handler_read_rnd_next": 0, "Handler_read_next": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("server work of a write-back of one row among %d: %v, want %v", n, got, want)
	}
	if left, _, err := m.Depth(t.Context()); err != nil || left != n-1 {
		t.Fatalf("%d rows left at the head, want %d (%v)", left, n-1, err)
	}
}

// numberedMailbox is the default server's mailbox (the test is skipped on
// another: it counts MariaDB's handler calls) holding rows messages,
// "<MSG>0</MSG>" on, opened as the pump opens it.
func numberedMailbox(t *testing.T, rows int) *mailbox.Mailbox {
	t.Helper()
	if mailboxtest.Server() != mailboxtest.DefaultServer {
		t.Skip("counts MariaDB's handler calls")
	}
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	bodies := make([]string, rows)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("<MSG>%d</MSG>", i)
	}
	mailboxtest.Write(t, db, mailboxtest.Bodies(bodies...)...)
	return openDefault(t, dsn)
}
