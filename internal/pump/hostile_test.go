package pump_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// After the mailbox's ids restart (here TRUNCATE, which resets
// AUTO_INCREMENT), a row whose id was processed before is a new message:
// it is applied, its predecessor's record is kept, and the pump says so.
func TestReusedMailboxIDsAreNewMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 6 {
		h.put(h.flop("REMC", 7, fmt.Sprintf("<REMC>old-%d</REMC>", i)))
	}
	h.drain(h.newPump())
	if got := h.flights()[7].Scalars["REMC"]; got != "old-5" {
		t.Fatalf("REMC before the reset = %q", got)
	}
	if _, err := h.mbox.Exec(`TRUNCATE TABLE CMINMSGS`); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 5 {
		ids = append(ids, h.put(h.flop("REMC", 7, fmt.Sprintf("<REMC>new-%d</REMC>", i))))
	}
	if ids[0] != 1 {
		t.Fatalf("the mailbox's ids did not restart: first new row is %d", ids[0])
	}
	p := h.newPump()
	h.drain(p)

	for _, id := range ids {
		h.wantRow(id, pumpdata.StatusSucceeded, "")
	}
	if got := h.flights()[7].Scalars["REMC"]; got != "new-4" {
		t.Fatalf("REMC after 5 new messages on reused ids = %q, want new-4", got)
	}
	if n := h.count(`SELECT count(*) FROM msg_id_reuse WHERE old_status = 'SUCCEEDED' AND old_body IS NOT NULL`); n != 5 {
		t.Fatalf("msg_id_reuse holds %d predecessors, want 5", n)
	}
	var oldBody string
	if err := h.db.QueryRow(t.Context(), `SELECT convert_from(old_body, 'UTF8') FROM msg_id_reuse WHERE message_id = 1`).Scan(&oldBody); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(oldBody, "old-0") {
		t.Fatalf("the predecessor's raw text was not kept: %q", oldBody)
	}
	var archived string
	if err := h.db.QueryRow(t.Context(), `SELECT convert_from(body, 'UTF8') FROM msg_archive WHERE message_id = 1`).Scan(&archived); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(archived, "new-0") {
		t.Fatalf("the archive holds %q for row 1, want the new message", archived)
	}
	st := p.Status()
	if st.IDsReused != 5 || st.IDReusedLast != ids[4] || st.IDReusedAt.IsZero() {
		t.Fatalf("status: reused %d, last %d at %s", st.IDsReused, st.IDReusedLast, st.IDReusedAt)
	}
	reusedNotices := 0
	for _, n := range p.DrainNotices() {
		if n.Kind == pump.NoticeIDReused && n.Reason == pump.ReasonIDReused {
			reusedNotices++
		}
	}
	if reusedNotices != 5 {
		t.Fatalf("%d notices of reused ids, want 5", reusedNotices)
	}
}

// A full-day snapshot on a reused id is not taken for a replay of the
// day's last snapshot, which had the same id.
func TestReusedIDIsNoSnapshotReplay(t *testing.T) {
	t.Parallel()
	eachBackend(t, reusedIDIsNoSnapshotReplay, "mailbox: {dnldFullDay: true}")
}

func reusedIDIsNoSnapshotReplay(t *testing.T, h *harness) {
	first := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(2, "CA2", "09")))
	h.drain(h.newPump())
	h.truncateMailbox()
	second := h.put(h.schd("DNLD", fltr(1, "CA1", "09"), fltr(3, "CA3", "09")))
	if first != second {
		t.Fatalf("ids %d and %d: the mailbox's ids did not restart", first, second)
	}
	h.drain(h.newPump())
	h.wantRow(second, pumpdata.StatusSucceeded, "")
	f := h.flights()
	if _, ok := f[2]; ok || len(f) != 2 {
		t.Fatalf("state after the second full-day snapshot: %v", keys(f))
	}
	if v := h.ledgerDay("2026-09-09").Version; v != 2 {
		t.Fatalf("day version %d, want 2", v)
	}
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A value too large for an index (SQLSTATE 54000, a program limit) is the
// message's own fault: DEAD at once, never a head blocked for good.
func TestProgramLimitErrorIsDeadNotAnOutage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.db.Exec(t.Context(), `CREATE INDEX test_remc ON flight_schd (remc)`); err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 3000)
	_, _ = rand.Read(noise)
	big := h.put(h.flop("REMC", 1, "<REMC>"+hex.EncodeToString(noise)+"</REMC>"))
	next := h.put(h.flop("ESTT", 2, "<ESTT>09SEP260930</ESTT>"))
	h.drain(h.newPump())
	r := h.wantRow(big, pumpdata.StatusDead, pump.ReasonDataRejected)
	if !strings.Contains(r.Note, "54000") && !strings.Contains(r.Note, "index row") {
		t.Fatalf("note does not say why: %q", r.Note)
	}
	h.wantRow(next, pumpdata.StatusSucceeded, "")
}

// The same server error about one message, again and again on a batch of
// one (here a trigger that refuses it), makes that message DEAD after
// RefusalRepeats tries; the messages behind it flow.
func TestRepeatedRefusalIsDeadNotAnOutage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.db.Exec(t.Context(), `
		CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.remc = 'BOOM' THEN RAISE EXCEPTION 'remark BOOM is refused'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER test_refuse BEFORE INSERT OR UPDATE ON flight_schd FOR EACH ROW EXECUTE FUNCTION test_refuse();`); err != nil {
		t.Fatal(err)
	}
	before := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
	boom := h.put(h.flop("REMC", 2, "<REMC>BOOM</REMC>"))
	after := h.put(h.flop("ESTT", 3, "<ESTT>09SEP260931</ESTT>"))
	h.drain(h.newPump())
	h.wantRow(before, pumpdata.StatusSucceeded, "")
	r := h.wantRow(boom, pumpdata.StatusDead, pump.ReasonDataRejected)
	if !strings.Contains(r.Note, "remark BOOM is refused") || !strings.Contains(r.Note, fmt.Sprintf("%d times", pump.RefusalRepeats)) {
		t.Fatalf("note %q", r.Note)
	}
	h.wantRow(after, pumpdata.StatusSucceeded, "")
	if f := h.flights(); len(f) != 2 {
		t.Fatalf("state: %v", keys(f))
	}
	// The rolled-back tries left no trace on the SEQN order: the retried
	// message is not "lower than" a SEQN that never committed.
	for _, id := range []int64{before, after} {
		if _, _, flags, _ := h.procState(id); len(flags) != 0 {
			t.Fatalf("row %d flagged %v after a rolled-back batch", id, flags)
		}
	}
}

// A schema problem (a table the pump needs is missing) blocks the head
// however often it repeats: it is never blamed on the message.
func TestMissingTableBlocksNeverKills(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive RENAME TO msg_archive_gone`); err != nil {
		t.Fatal(err)
	}
	id := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
	p := h.newPump()
	h.runUntil(p, "the head blocked on the missing table", headBlocked(p, id, "msg_archive"))
	if r := h.row(id); r.Processed {
		t.Fatalf("row %d was written back %+v while its table was missing", id, r)
	}
	if st := p.Status(); st.HeadID != id || st.HeadBlockedSince.IsZero() {
		t.Fatalf("head not reported blocked: %+v", st)
	}
	if _, err := h.db.Exec(t.Context(), `ALTER TABLE msg_archive_gone RENAME TO msg_archive`); err != nil {
		t.Fatal(err)
	}
	h.drain(p)
	h.wantRow(id, pumpdata.StatusSucceeded, "")
}

// A mailbox whose write-back fails (here a trigger refusing the UPDATE)
// is retried with backoff, not in a tight loop of reads and PostgreSQL
// transactions; once it accepts again, every result lands.
func TestFailingWriteBackBacksOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "pump: {backoffInitial: 100ms, backoffMax: 200ms, unsupportedRetryLimit: 2}")
	if _, err := h.mbox.Exec(`CREATE TRIGGER test_refuse_writeback BEFORE UPDATE ON CMINMSGS FOR EACH ROW
		SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'write-back refused'`); err != nil {
		t.Fatal(err)
	}
	ids := []int64{h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>")), h.put(h.flop("ESTT", 2, "<ESTT>09SEP260931</ESTT>"))}
	// A fake clock: no time passes unless the test steps it, so every
	// write-back attempt beyond one per step would be a loop that does
	// not wait (each try a head read and a PostgreSQL transaction).
	fake := clocktesting.NewFakeClock(h.clock.Now())
	p := h.newPump(func(o *pump.Options) { o.Clock = fake })
	attempts := func() int { return h.count(`SELECT coalesce(max(attempts), 0) FROM backfill_todo`) }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	// The clock moves 20 ms at a time, only while the pump waits on it and
	// only until the next attempt is recorded (the pump records an attempt
	// before it waits for the next, so no step ever shortens the wait that
	// follows it). Another of the pump's timers may be what waits: a step
	// given to it is no attempt. Each attempt must have waited at least
	// the backoff's floor (the upper half of backoffInitial: 50 ms) of the
	// clock, and no two attempts may share one wait.
	const steps, step, floor = 5, 20 * time.Millisecond, 50 * time.Millisecond
	await.Eventually(t, "write-back attempt 1", 60*time.Second, func() (bool, string) {
		n := attempts()
		return n >= 1, fmt.Sprintf("%d attempts", n)
	})
	for k := 2; k <= steps; k++ {
		var waited time.Duration
		await.Eventually(t, fmt.Sprintf("write-back attempt %d", k), 60*time.Second, func() (bool, string) {
			if n := attempts(); n >= k {
				return true, ""
			}
			if fake.HasWaiters() {
				fake.Step(step)
				waited += step
			}
			return false, fmt.Sprintf("%d attempts, the clock moved %v", attempts(), waited)
		})
		if n := attempts(); n != k {
			t.Fatalf("%d write-back attempts after %d waits: the pump retried without waiting", n, k-1)
		}
		if waited < floor {
			t.Fatalf("attempt %d came after %v of the clock, less than the backoff's floor %v: the pump did not wait", k, waited, floor)
		}
	}
	st := p.Status()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.MailboxReachable || !strings.Contains(st.MailboxError, "write-back refused") {
		t.Fatalf("status does not show the failing mailbox: %+v", st)
	}
	if _, err := h.mbox.Exec(`DROP TRIGGER test_refuse_writeback`); err != nil {
		t.Fatal(err)
	}
	h.drain(h.newPump()) // on the real clock
	for _, id := range ids {
		h.wantRow(id, pumpdata.StatusSucceeded, "")
	}
}

// logLines collects log lines for assertions.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (l *logLines) matching(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

type countingObserver struct {
	pump.NopObserver
	mu     sync.Mutex
	errors map[string]int
}

func (o *countingObserver) ServiceError(service string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errors[service]++
}

func (o *countingObserver) count(service string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.errors[service]
}

// A mailbox outage (the inbound table renamed away) is logged once, not
// once per attempt, shown in the status and counted; its end is logged.
func TestMailboxOutageIsLoggedShownAndCounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
	if _, err := h.mbox.Exec(`RENAME TABLE CMINMSGS TO CMINMSGS_AWAY`); err != nil {
		t.Fatal(err)
	}
	var logs logLines
	obs := &countingObserver{errors: map[string]int{}}
	p := h.newPump(func(o *pump.Options) { o.Log, o.Observer = logs.logger(), obs })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for obs.count(pump.ServiceMailbox) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := p.Status(); st.MailboxReachable || !strings.Contains(st.MailboxError, "CMINMSGS") {
		t.Fatalf("status during the outage: reachable %v, error %q", st.MailboxReachable, st.MailboxError)
	}
	if n := logs.matching("mailbox unreachable"); n != 1 {
		t.Fatalf("%d 'mailbox unreachable' lines after %d failures, want 1", n, obs.count(pump.ServiceMailbox))
	}
	if _, err := h.mbox.Exec(`RENAME TABLE CMINMSGS_AWAY TO CMINMSGS`); err != nil {
		t.Fatal(err)
	}
	for !h.row(id).Processed && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	reachable := p.Status().MailboxReachable
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.wantRow(id, pumpdata.StatusSucceeded, "")
	if logs.matching("mailbox reachable again") != 1 || !reachable {
		t.Fatalf("the outage's end was not logged (%d) or shown (%v):\n%s", logs.matching("mailbox reachable again"), reachable,
			strings.Join(logs.lines, "\n"))
	}
}

// A NULL body is DEAD with a reason of its own, and archived as empty.
func TestNullBodyIsDeadAndArchived(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		if h.mbox != nil {
			if _, err := h.mbox.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT NULL`); err != nil {
				t.Fatal(err)
			}
		}
		null := h.insertRow(mailbox.Inbound{Null: true})
		next := h.put(h.flop("ESTT", 1, "<ESTT>09SEP260930</ESTT>"))
		h.drain(h.newPump())
		r := h.wantRow(null, pumpdata.StatusDead, pump.ReasonEmptyBody)
		if strings.Contains(r.Note, "SQLSTATE") || strings.Contains(r.Note, "violates") {
			t.Fatalf("note is a raw SQL error: %q", r.Note)
		}
		if held, size, kept, _ := h.archived(null); !held || size != 0 || kept != 0 {
			t.Fatal("the NULL body was not archived as empty")
		}
		h.wantRow(next, pumpdata.StatusSucceeded, "")
	})
}

// Bodies in a GBK or Latin-1 column are read as the text they hold (the
// server converts them); a note that the note column's character set
// cannot hold is still written back.
func TestNonUTF8MailboxColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		charset, text string
	}{
		{"gbk", "北京首都"},
		{"latin1", "Zürich"},
		{"utf8mb4", "北京首都 ✈ Zürich"},
	} {
		t.Run(c.charset, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			if _, err := h.mbox.Exec(fmt.Sprintf(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT CHARACTER SET %[1]s NOT NULL,
				MODIFY CMINMSGS_PROC_NOTE VARCHAR(512) CHARACTER SET %[1]s NULL`, c.charset)); err != nil {
				t.Fatal(err)
			}
			ok := h.put(h.flop("REMC", 1, "<REMC>"+c.text+"</REMC>"))
			// DEAD with a note too long for the note column: it is cut with
			// "…[cut]", and a Latin-1 column has no "…".
			bad := h.put(h.flop("NAAT", 2, "<NAAT>"+c.text+strings.Repeat("x", 600)+"</NAAT>"))
			h.drain(h.newPump())
			h.wantRow(ok, pumpdata.StatusSucceeded, "")
			if got := h.flights()[1].Scalars["REMC"]; got != c.text {
				t.Fatalf("REMC = %q, want %q", got, c.text)
			}
			if r := h.wantRow(bad, pumpdata.StatusDead, "BAD_TIME"); !strings.Contains(r.Note, c.text) || !strings.HasSuffix(r.Note, "[cut]") {
				t.Fatalf("note %q", r.Note)
			}
		})
	}
}

type batchObserver struct {
	pump.NopObserver
	mu      sync.Mutex
	batches []int
}

func (o *batchObserver) BatchCommitted(messages int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches = append(o.batches, messages)
}

// Bodies in memory at once — the batch being applied and the one read
// ahead — stay within mailbox.maxBatchBytes; a message larger than that is
// applied alone. The bound is bytes, not rows.
func TestBatchesAreBoundedByBytes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, h *harness) {
		remark := strings.Repeat("r", 10000)
		var ids []int64
		for i := range 30 {
			ids = append(ids, h.put(h.flop("REMC", 1+i%5, "<REMC>"+remark+fmt.Sprint(i)+"</REMC>")))
		}
		var records []string
		for i := range 600 {
			records = append(records, fltr(100+i, "CA"+fmt.Sprint(i), "09", "<REMC>"+strings.Repeat("L", 100)+"</REMC>"))
		}
		large := h.put(h.schd("DNLD", records...)) // about 120 kB
		obs := &batchObserver{}
		h.drain(h.newPump(func(o *pump.Options) { o.Observer = obs }))
		for _, id := range append(ids, large) {
			h.wantRow(id, pumpdata.StatusSucceeded, "")
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		total := 0
		for _, n := range obs.batches {
			// 65,536 bytes hold six bodies of about 10,200 bytes.
			if n > 6 {
				t.Fatalf("a batch of %d messages of 10 kB each under a 64 KiB budget: %v", n, obs.batches)
			}
			total += n
		}
		if total != 31 {
			t.Fatalf("%d messages committed, want 31: %v", total, obs.batches)
		}
	}, "mailbox: {maxBatchBytes: 65536}")
}

// History is decided on the flight's day (processing rules R8.1): a flight leaves
// current state only when its operation day — here the airport-local day
// of its SODT — is over and the rule's SIS time, if later, is older than
// the rule's age. A flight cancelled days ahead for tomorrow stays; a time
// implausibly far from the flight's day (01JAN000000) is kept, flagged and
// ignored; a flight with neither day nor SODT is left to NULL-day
// retention.
func TestHistoryIsAnchoredOnTheOperationDay(t *testing.T) {
	t.Parallel()
	eachBackend(t, historyIsAnchoredOnTheOperationDay, "history: {scheduledAge: 240h, cancelledAge: 24h, departedAge: 24h, arrivedAge: 24h}")
}

func historyIsAnchoredOnTheOperationDay(t *testing.T, h *harness) {
	type flightCase struct {
		flid   int
		fields []string // TAG=value, one FLOP each
		reason string   // "" stays current
	}
	cases := []flightCase{
		{1, []string{"SODT=25AUG260800"}, pumpdata.HistoryScheduled},
		{2, []string{"SODT=07SEP260800", "CNCL=06SEP260900"}, pumpdata.HistoryCancelled},
		{3, []string{"SODT=10SEP260800", "CNCL=06SEP260900"}, ""},
		{4, []string{"SODT=07SEP260800", "NAAT=07SEP260900"}, pumpdata.HistoryDeparted},
		{5, []string{"SODT=08SEP262300", "NAAT=09SEP260300"}, ""},
		{6, []string{"SODT=07SEP260800", "NEAT=07SEP261000"}, pumpdata.HistoryArrived},
		{7, []string{"SODT=09SEP260800", "NAAT=01JAN000000"}, ""},
		{8, []string{"NAAT=01SEP260800"}, ""},
	}
	ids := map[int]int64{} // the message that set the flight's last field
	for _, c := range cases {
		for _, f := range c.fields {
			tag, value, _ := strings.Cut(f, "=")
			ids[c.flid] = h.put(h.flop(tag, c.flid, fmt.Sprintf("<%s>%s</%[1]s>", tag, value)))
		}
	}
	h.drain(h.newPump())
	for _, c := range cases {
		h.wantRow(ids[c.flid], pumpdata.StatusSucceeded, "")
	}
	if _, _, flags, _ := h.procState(ids[7]); !slices.Contains(flags, pump.FlagImplausibleTime) {
		t.Fatalf("the 01JAN000000 NAAT was not flagged: %v", flags)
	}
	if _, _, flags, _ := h.procState(ids[5]); len(flags) != 0 {
		t.Fatalf("a plausible NAAT was flagged: %v", flags)
	}
	// Lifecycle jobs run at start and every sweepInterval, on the FIFO.
	h.drain(h.newPump())
	current := h.flights()
	for _, c := range cases {
		_, stays := current[flight.FLID(c.flid)]
		reasons, _ := h.history(flight.FLID(c.flid))
		reason := strings.Join(reasons, ",")
		switch {
		case c.reason == "" && (!stays || len(reasons) > 0):
			t.Errorf("flight %d (%s) left current state (history %q)", c.flid, c.fields, reason)
		case c.reason != "" && (stays || reason != c.reason):
			t.Errorf("flight %d (%s): current %v, history reason %q, want %s", c.flid, c.fields, stays, reason, c.reason)
		}
	}
	// The flights that stay do not churn: no tombstone, no new version.
	if n := h.tombstones(3) + h.tombstones(5) + h.tombstones(7) + h.tombstones(8); n != 0 {
		t.Fatalf("%d tombstones for flights that stay", n)
	}
}

// A backlog at the head is taken a full batch at once: the
// first transaction after start already holds mailbox.batchSize messages,
// not one (no 1, 2, 4 … ramp). The ramp stays for the retries after a
// failure, which isolate the failing message (TestBatchOutcomes).
func TestBacklogIsTakenAFullBatchAtOnce(t *testing.T) {
	t.Parallel()
	// mailbox.batchSize 50
	eachBackend(t, func(t *testing.T, h *harness) {
		var ids []int64
		for i := range 120 {
			ids = append(ids, h.put(h.flop("ESTT", 1+i%7, fmt.Sprintf("<ESTT>09SEP2609%02d</ESTT>", i))))
		}
		obs := &batchObserver{}
		h.drain(h.newPump(func(o *pump.Options) { o.Observer = obs }))
		for _, id := range ids {
			h.wantRow(id, pumpdata.StatusSucceeded, "")
		}
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if diff := cmp.Diff([]int{50, 50, 20}, obs.batches); diff != "" {
			t.Fatalf("messages per committed transaction for a backlog of 120, batchSize 50 (-want +got):\n%s", diff)
		}
	})
}
