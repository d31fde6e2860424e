package pump_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"k8s.io/utils/clock"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pgstore"
	"github.com/flightfeed/flightfeed/internal/pump/pumptest"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// testNow is the pump's "now" in these tests: 2026-09-09 10:00 in
// Shanghai, so the request horizon and SIS times line up with the messages.
var testNow = time.Date(2026, 9, 9, 2, 0, 0, 0, time.UTC)

// shiftedClock is the real clock (real timers, so the pump's waits work)
// reading as if it were testNow when the test started.
type shiftedClock struct {
	clock.RealClock
	offset time.Duration
}

func (c shiftedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// harness is a feed, its mailbox and its database for one test: the real
// ones (newHarness: MariaDB and PostgreSQL), or the pump's ports in memory
// (newMemHarness: mem and inbox set, mbox, db and store nil).
type harness struct {
	t       *testing.T
	feed    *config.Feed
	mbox    *sql.DB
	db      *pgx.Conn
	store   *store.Store
	mem     *pumptest.Store
	inbox   *pumptest.Inbox
	clock   shiftedClock
	nextRow time.Time
	sisMessages
}

// backendsEnv set to "memory" runs the behaviour suite on the memory
// backend alone and skips the tests that need the real services (no
// PostgreSQL, no MariaDB needed).
const backendsEnv = "FLIGHTFEED_PUMP_BACKENDS"

// eachBackend runs test, a behaviour of the pump, against both backends:
// the ports in memory (internal/pump/pumptest) and the real mailbox and
// database, so the memory one cannot drift from what the pump does with
// the real ones. extra are YAML lines for the feed (testFeed).
func eachBackend(t *testing.T, test func(t *testing.T, h *harness), extra ...string) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, newMemHarness(t, extra...))
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv(backendsEnv) == "memory" {
			t.Skipf("%s=memory", backendsEnv)
		}
		t.Parallel()
		test(t, newHarness(t, extra...))
	})
}

// newMemHarness is newHarness on the pump's ports in memory.
func newMemHarness(t *testing.T, extra ...string) *harness {
	t.Helper()
	feed := testFeed(t, "mem:mem@tcp(127.0.0.1:1)/mailbox", "postgres://mem@127.0.0.1:1/feed", extra...)
	h := &harness{t: t, feed: feed, inbox: pumptest.NewInbox(), clock: shiftedClock{offset: time.Until(testNow)},
		nextRow: testNow.Add(-time.Hour)}
	// The database's clock is the harness's, as a test moves it (the real
	// store reads the pump's clock).
	h.mem = pumptest.NewStore(func() time.Time { return h.clock.Now() })
	return h
}

// newHarness gives a fresh mailbox and database and a feed config; extra
// YAML lines override the defaults (testFeed).
func newHarness(t *testing.T, extra ...string) *harness {
	t.Helper()
	if os.Getenv(backendsEnv) == "memory" {
		t.Skipf("needs PostgreSQL and MariaDB (%s=memory)", backendsEnv)
	}
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	feed := testFeed(t, mdsn, pdsn, extra...)
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mbox.Close() })
	ctx := context.Background()
	if _, err := store.Migrate(ctx, pdsn); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, pdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	st, err := store.Open(ctx, pdsn, store.Options{Location: feed.Location})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &harness{t: t, feed: feed, mbox: mbox, db: db, store: st,
		clock: shiftedClock{offset: time.Until(testNow)}, nextRow: testNow.Add(-time.Hour)}
}

// put inserts a mailbox row received a second after the previous one.
func (h *harness) put(body string) int64 {
	h.t.Helper()
	return h.insertRow(mailbox.Inbound{Body: body})
}

// insertRow inserts row (its body, or NULL) into the mailbox, received a
// second after the previous one.
func (h *harness) insertRow(row mailbox.Inbound) int64 {
	h.t.Helper()
	h.nextRow = h.nextRow.Add(time.Second)
	row.Received = h.nextRow
	if h.inbox != nil {
		var body []byte
		if !row.Null {
			body = []byte(row.Body)
		}
		return h.inbox.Put(body, row.Received)
	}
	return mailboxtest.Write(h.t, h.mbox, row)
}

func (h *harness) newPump(opts ...func(*pump.Options)) *pump.Pump {
	h.t.Helper()
	o := pump.Options{Feed: feedrun.PumpFeed(h.feed), Identity: "test-pump", Clock: h.clock, Door: feedDoor(h.t, h.feed)}
	if h.mem != nil {
		o.Store, o.Inbox = h.mem, h.inbox
	} else {
		// Each pump has a store of its own, on the pump's clock, as
		// feedrun opens one per run.
		st, err := store.Open(context.Background(), h.feed.Secrets.DatabaseDSN, store.Options{
			MaxConns: h.feed.Spec.Database.MaxConns, Location: h.feed.Location, Clock: h.clock})
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(st.Close)
		o.Store = pgstore.New(st)
	}
	for _, f := range opts {
		f(&o)
	}
	if o.Inbox == nil {
		// The feed's mailbox, as feedrun opens it.
		mb, err := mailbox.OpenFeed(context.Background(), h.feed)
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { _ = mb.Close() })
		o.Inbox = mb
	}
	p, err := pump.New(context.Background(), o)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// feedDoor is the record-size door of feed's Kafka settings, as feedrun
// builds it (nil when kafka.maxRecordBytes is 0).
func feedDoor(t testing.TB, feed *config.Feed) pump.Door {
	t.Helper()
	if feed.Spec.Kafka.MaxRecordBytes <= 0 {
		return nil
	}
	door, err := recsize.New(int(feed.Spec.Kafka.MaxRecordBytes), feed.Spec.Kafka.Compression)
	if err != nil {
		t.Fatal(err)
	}
	return door
}

// drain runs a pump until the mailbox is drained (bounded: a blocked head
// fails the test instead of hanging it).
func (h *harness) drain(p *pump.Pump) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Drain(ctx, nil); err != nil {
		h.t.Fatalf("drain: %v", err)
	}
	if ctx.Err() != nil {
		h.t.Fatalf("drain did not finish: %+v", p.Status())
	}
}

// runUntil runs a pump until cond holds (what names it in a failure),
// then stops it: for heads that must stay blocked, however slow the
// machine.
func (h *harness) runUntil(p *pump.Pump, what string, cond func() (bool, string)) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	h.t.Cleanup(func() { _ = stop() })
	await.Eventually(h.t, what, 60*time.Second, cond)
	if err := stop(); err != nil {
		h.t.Fatalf("run: %v", err)
	}
}

// runFor runs a pump for d: only for what must not happen in that time.
func (h *harness) runFor(p *pump.Pump, d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.Run(ctx); err != nil {
		h.t.Fatalf("run: %v", err)
	}
}

// headBlocked holds when p reports head blocked with an error containing
// cause.
func headBlocked(p *pump.Pump, head int64, cause string) func() (bool, string) {
	return func() (bool, string) {
		st := p.Status()
		return st.HeadID == head && !st.HeadBlockedSince.IsZero() && strings.Contains(st.HeadLastError, cause),
			fmt.Sprintf("head %d blocked since %v: %q", st.HeadID, st.HeadBlockedSince, st.HeadLastError)
	}
}

type mailboxRow struct {
	Processed bool
	Result    string
	Note      string
}

func (h *harness) row(id int64) mailboxRow {
	h.t.Helper()
	if h.inbox != nil {
		r, ok := h.inbox.Result(id)
		return mailboxRow{ok, r.Result, r.Note}
	}
	var processed sql.NullTime
	var result, note sql.NullString
	if err := h.mbox.QueryRow(`SELECT CMINMSGS_DATE_PROCESSED, CMINMSGS_PROC_RESULT, CMINMSGS_PROC_NOTE FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).
		Scan(&processed, &result, &note); err != nil {
		h.t.Fatal(err)
	}
	return mailboxRow{processed.Valid, result.String, note.String}
}

// wantRow asserts a row's backfilled result and that its note starts with
// the reason.
func (h *harness) wantRow(id int64, result, reason string) mailboxRow {
	h.t.Helper()
	r := h.row(id)
	if !r.Processed || r.Result != result || !strings.HasPrefix(r.Note, reason) {
		h.t.Fatalf("row %d = %+v, want %s with note starting %q", id, r, result, reason)
	}
	return r
}

func (h *harness) procState(id int64) (status, reason string, flags []string, attempts int) {
	h.t.Helper()
	if h.mem != nil {
		var known bool
		h.mem.View(func(d pumptest.Data) {
			var st pumpdata.ProcState
			st, known = d.States[id]
			status, reason, attempts = st.Status, st.Reason, st.Attempts
			flags = d.Results[id].Flags
		})
		if !known {
			h.t.Fatalf("proc_state %d: none", id)
		}
		if flags == nil {
			flags = []string{}
		}
		return status, reason, flags, attempts
	}
	err := h.db.QueryRow(context.Background(), `SELECT status, coalesce(reason, ''), flags, attempts FROM proc_state WHERE message_id = $1`, id).
		Scan(&status, &reason, &flags, &attempts)
	if err != nil {
		h.t.Fatalf("proc_state %d: %v", id, err)
	}
	return status, reason, flags, attempts
}

func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (h *harness) flights() map[flight.FLID]flight.State {
	h.t.Helper()
	if h.mem != nil {
		var out map[flight.FLID]flight.State
		h.mem.View(func(d pumptest.Data) { out = maps.Clone(d.Flights) })
		return out
	}
	states, err := h.store.ReadFlights(context.Background(), store.Filter{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[flight.FLID]flight.State{}
	for _, s := range states {
		out[s.FLID] = s
	}
	return out
}

// export returns the canonical JSON lines of every flight.
func (h *harness) export() string {
	h.t.Helper()
	var states []flight.State
	if h.mem != nil {
		flights := h.flights()
		for _, f := range slices.Sorted(maps.Keys(flights)) {
			states = append(states, flights[f])
		}
	} else {
		var err error
		if states, err = h.store.ReadFlights(context.Background(), store.Filter{}); err != nil {
			h.t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, s := range states {
		doc, err := flight.CanonicalJSON(s)
		if err != nil {
			h.t.Fatal(err)
		}
		b.Write(doc)
		b.WriteByte('\n')
	}
	return b.String()
}

// testFeed is the feed config of these tests, on the given mailbox and
// database DSNs: requests and history off, fast backoff, unless extra YAML
// lines override them; a "mailbox: {...}" line adds to the mailbox section
// (its batchSize replaces the default 50).
func testFeed(t *testing.T, mailboxDSN, databaseDSN string, extra ...string) *config.Feed {
	t.Helper()
	mailboxExtra := ""
	var rest []string
	for _, e := range extra {
		if inner, ok := strings.CutPrefix(e, "mailbox: {"); ok {
			mailboxExtra += ", " + strings.TrimSuffix(inner, "}")
			continue
		}
		rest = append(rest, e)
	}
	if !strings.Contains(mailboxExtra, "batchSize:") {
		mailboxExtra = ", batchSize: 50" + mailboxExtra
	}
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms%s}
database: {dsn: %q}
`, mailboxDSN, mailboxExtra, databaseDSN)
	overrides := strings.Join(rest, "\n")
	if !strings.Contains(overrides, "kafka:") {
		doc += `kafka: {brokers: ["127.0.0.1:9092"]}` + "\n"
	}
	if !strings.Contains(overrides, "requests:") {
		doc += "requests: {disabled: true}\n"
	}
	if !strings.Contains(overrides, "pump:") {
		doc += "pump: {backoffInitial: 5ms, backoffMax: 50ms, unsupportedRetryLimit: 2}\n"
	}
	if !strings.Contains(overrides, "history:") {
		doc += "history: {disabled: true}\n"
	}
	doc += overrides + "\n"
	feed, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	return feed
}

// ---- SIS message builders -------------------------------------------------

// sisMessages builds the SIS messages of these tests, numbered from SEQN 101.
type sisMessages struct{ seqn int }

// meta renders a META with the next SEQN.
func (m *sisMessages) meta(typ, styp string) string {
	m.seqn++
	return fmt.Sprintf(`<META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>%d</SEQN><DDTM>20260909100000</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`,
		m.seqn+100, typ, styp)
}

// fltr is one FLTR record on day 9 (SODT 09SEP26hhmm) or 10 ("10").
func fltr(flid int, flno, dd string, extra ...string) string {
	return fmt.Sprintf(`<FLTR><FLID>%d</FLID><FLNO>%s</FLNO><SODT>%sSEP260800</SODT>%s</FLTR>`, flid, flno, dd, strings.Join(extra, ""))
}

func (m *sisMessages) schd(styp string, records ...string) string {
	return fmt.Sprintf(`<MSG>%s<SCHD><RECS>%d</RECS>%s</SCHD></MSG>`, m.meta("SCHD", styp), len(records), strings.Join(records, ""))
}

func (m *sisMessages) flop(styp string, flid int, inner string) string {
	return fmt.Sprintf(`<MSG>%s<FLOP><FLID>%d</FLID>%s</FLOP></MSG>`, m.meta("FLOP", styp), flid, inner)
}

// ---- what the database holds, on either backend --------------------------

// archived is what the raw archive holds of message id: whether it holds
// it, its size, the length of the body kept and whether it was cut.
func (h *harness) archived(id int64) (held bool, size int64, kept int, truncated bool) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			var a pumpdata.ArchivedRow
			a, held = d.Archive[id]
			size, kept, truncated = a.Size, len(a.Body), a.Truncated
		})
		return held, size, kept, truncated
	}
	err := h.db.QueryRow(context.Background(), `SELECT byte_size, length(body), truncated FROM msg_archive WHERE message_id = $1`, id).
		Scan(&size, &kept, &truncated)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, 0, 0, false
	}
	if err != nil {
		h.t.Fatalf("msg_archive %d: %v", id, err)
	}
	return true, size, kept, truncated
}

// archivedCount is the number of messages in the raw archive.
func (h *harness) archivedCount() int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) { n = len(d.Archive) })
		return n
	}
	return h.count(`SELECT count(*) FROM msg_archive`)
}

// intents is the number of messages whose result waits for the mailbox.
func (h *harness) intents() int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) { n = len(d.Backfills) })
		return n
	}
	return h.count(`SELECT count(DISTINCT m.id) FROM backfill_todo b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id)`)
}

// statusCount is the number of messages whose processing state is status.
func (h *harness) statusCount(status string) int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) {
			for _, s := range d.States {
				if s.Status == status {
					n++
				}
			}
		})
		return n
	}
	return h.count(`SELECT count(*) FROM proc_state WHERE status = $1`, status)
}

// procStates is the number of messages with a processing state, of any
// status.
func (h *harness) procStates() int {
	h.t.Helper()
	if h.mem != nil {
		var n int
		h.mem.View(func(d pumptest.Data) { n = len(d.States) })
		return n
	}
	return h.count(`SELECT count(*) FROM proc_state`)
}

// writtenBack are the mailbox rows that carry a result, and intents the
// messages whose result waits to be written back, by id.
func (h *harness) writtenBack() (writtenBack, intents []int64) {
	h.t.Helper()
	if h.inbox != nil {
		h.inbox.Lock()
		writtenBack = slices.Sorted(maps.Keys(h.inbox.Results))
		h.inbox.Unlock()
		h.mem.View(func(d pumptest.Data) { intents = slices.Sorted(maps.Keys(d.Backfills)) })
		return writtenBack, intents
	}
	rows, err := h.mbox.Query(`SELECT CMINMSGS_ID FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL ORDER BY CMINMSGS_ID`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			h.t.Fatal(err)
		}
		writtenBack = append(writtenBack, id)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	irows, err := h.db.Query(context.Background(), `SELECT DISTINCT m.id FROM backfill_todo b CROSS JOIN LATERAL unnest(b.message_ids) AS m(id) ORDER BY 1`)
	if err != nil {
		h.t.Fatal(err)
	}
	if intents, err = pgx.CollectRows(irows, pgx.RowTo[int64]); err != nil {
		h.t.Fatal(err)
	}
	return writtenBack, intents
}

// resultTransactions is the number of committed transactions that wrote
// the results of messages ids (in PostgreSQL, the distinct xmin of their
// proc_state rows).
func (h *harness) resultTransactions(ids []int64) int {
	h.t.Helper()
	if h.mem != nil {
		n := 0
		for _, commit := range h.mem.Commits() {
			for _, line := range commit {
				id, _, _ := strings.Cut(line, " ")
				if slices.Contains(ids, mustParseID(h.t, id)) {
					n++
					break
				}
			}
		}
		return n
	}
	return h.count(`SELECT count(DISTINCT xmin::text) FROM proc_state WHERE message_id = ANY($1)`, ids)
}

func mustParseID(t *testing.T, s string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("id %q: %v", s, err)
	}
	return id
}

// processedIDs are the messages whose processing state is status, by id.
func (h *harness) processedIDs(status string) []int64 {
	h.t.Helper()
	if h.mem != nil {
		var out []int64
		h.mem.View(func(d pumptest.Data) {
			for id, s := range d.States {
				if s.Status == status {
					out = append(out, id)
				}
			}
		})
		slices.Sort(out)
		return out
	}
	rows, err := h.db.Query(context.Background(), `SELECT message_id FROM proc_state WHERE status = $1 ORDER BY 1`, status)
	if err != nil {
		h.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// events is the number of outbox rows (msg_event) message id wrote, and
// records the number of Kafka records they carry (msg_event_record: a
// notice, a state or tombstone); id 0 counts every message's.
func (h *harness) events(id int64) (events, records int) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.View(func(d pumptest.Data) {
			for _, e := range d.Outbox {
				if id != 0 && e.MessageID != id {
					continue
				}
				events++
				if e.Notice != "" {
					records++
				}
				if e.Event != "" {
					records++
				}
			}
		})
		return events, records
	}
	if id == 0 {
		return h.count(`SELECT count(*) FROM msg_event`), h.count(`SELECT count(*) FROM msg_event_record`)
	}
	return h.count(`SELECT count(*) FROM msg_event WHERE message_id = $1`, id),
		h.count(`SELECT count(*) FROM msg_event_record WHERE message_id = $1`, id)
}

// takeOver makes another pump the writer, fencing the ones running.
func (h *harness) takeOver() {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Fence()
		return
	}
	if _, err := h.store.TakeEpoch(h.t.Context(), "newer"); err != nil {
		h.t.Fatal(err)
	}
}

// unprocess clears row id's written-back result in the mailbox, as an
// operator resetting it would.
func (h *harness) unprocess(id int64) {
	h.t.Helper()
	if h.inbox != nil {
		h.inbox.Lock()
		delete(h.inbox.Results, id)
		h.inbox.Unlock()
		return
	}
	if _, err := h.mbox.Exec(`UPDATE CMINMSGS SET CMINMSGS_DATE_PROCESSED = NULL, CMINMSGS_PROC_RESULT = NULL WHERE CMINMSGS_ID = ?`, id); err != nil {
		h.t.Fatal(err)
	}
}

// strayArchiveRow archives a row for message id that nothing else of the
// database knows (something outside the pump wrote or kept it).
func (h *harness) strayArchiveRow(id int64) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Update(func(d *pumptest.Data) {
			d.Archive[id] = pumpdata.ArchivedRow{MessageID: id, ReceivedAt: time.Now(), Size: 1, Digest: []byte{0}, Body: []byte("x")}
		})
		return
	}
	if _, err := h.db.Exec(context.Background(), `INSERT INTO msg_archive (message_id, received_at, byte_size, digest, body)
		VALUES ($1, now(), 1, '\x00', 'x')`, id); err != nil {
		h.t.Fatal(err)
	}
}

// committedNotWrittenBack commits a result for the last row put (body) and
// its backfill intent, as a pump that crashed before writing it back left
// them.
func (h *harness) committedNotWrittenBack(id int64, body, status, reason, note string) {
	h.t.Helper()
	if h.mem != nil {
		h.mem.Update(func(d *pumptest.Data) {
			d.States[id] = pumpdata.ProcState{Status: status, Reason: reason, Note: note, Attempts: 1, Finished: time.Now(),
				ReceivedAt: h.nextRow, Digest: pumpdata.PayloadDigest([]byte(body))}
			d.Backfills[id] = pumpdata.Backfill{MessageID: id, Result: status, Note: note, Processed: time.Now(), Received: h.nextRow}
		})
		return
	}
	if _, err := h.db.Exec(h.t.Context(), `INSERT INTO proc_state (message_id, status, reason, note, received_at, payload_digest, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, now())`, id, status, reason, note, h.nextRow, pumpdata.PayloadDigest([]byte(body))); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.db.Exec(h.t.Context(), `INSERT INTO backfill_todo (message_ids, processed_at) VALUES (ARRAY[$1::bigint], now())`, id); err != nil {
		h.t.Fatal(err)
	}
}
