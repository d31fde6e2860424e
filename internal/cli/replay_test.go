package cli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// replayWorld is a feed (full-day DNLDs) whose pump committed today
// with FLIDs 1 and 2 (row 1), refused tomorrow's snapshot holding FLIDs
// 2 and 3 as DEAD(SAME_FLID_ACROSS_OPERATION_DAYS) (row 2), applied a FLOP
// (row 3), refused a message that is not XML (row 4) and then the rows in
// more, in order.
type replayWorld struct {
	// today and tomorrow in the airport's time zone (days in the past
	// would leave through the history sweep), as YYYY-MM-DD.
	today, tomorrow string
	cfg             string
	database        string
	mbox            *sql.DB
}

func newReplayWorld(t *testing.T, more ...string) replayWorld {
	t.Helper()
	mailboxDSN, databaseDSN, broker := mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 10ms, dnldFullDay: true}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {disabled: true}
`, mailboxDSN, databaseDSN, broker)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mbox.Close() })
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(loc)
	next := now.AddDate(0, 0, 1)
	w := replayWorld{cfg: cfg, database: databaseDSN, mbox: mbox, today: now.Format(time.DateOnly), tomorrow: next.Format(time.DateOnly)}
	w.put(t, append([]string{
		dnld(1, sisDay(now), "1", "2"),
		dnld(2, sisDay(next), "2", "3"),
		sisMessage(3, "FLOP", "ESTT", `<FLOP><FLID>1</FLID><ESTT>`+sisDay(now)+`0930</ESTT></FLOP>`),
		`not xml`,
	}, more...)...)
	w.drain(t)
	return w
}

func sisMessage(seqn int, typ, styp, body string) string {
	return fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909101500</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>%s</MSG>`,
		seqn, typ, styp, body)
}

// sisDay is t's day as SIS writes it (DDMONYY).
func sisDay(t time.Time) string { return strings.ToUpper(t.Format("02Jan06")) }

func dnld(seqn int, day string, flids ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<SCHD><RECS>%d</RECS>", len(flids))
	for _, f := range flids {
		fmt.Fprintf(&b, "<FLTR><FLID>%s</FLID><SODT>%s0800</SODT></FLTR>", f, day)
	}
	return sisMessage(seqn, "SCHD", "DNLD", b.String()+"</SCHD>")
}

func (w replayWorld) put(t *testing.T, bodies ...string) {
	t.Helper()
	for _, body := range bodies {
		mailboxtest.Write(t, w.mbox, mailboxtest.Bodies(body)...)
	}
}

func (w replayWorld) drain(t *testing.T) {
	t.Helper()
	if code, _, errOut := runCLI("pump", "--config", w.cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
}

func (w replayWorld) query(t *testing.T, q string, args ...any) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), w.database)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var out string
	if err := conn.QueryRow(t.Context(), q, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func (w replayWorld) day(t *testing.T, flid int) string {
	return w.query(t, `SELECT coalesce(operation_day::text, 'NULL') FROM flight_schd WHERE flid = $1`, flid)
}

func (w replayWorld) mailboxNote(t *testing.T, id int) string {
	t.Helper()
	var note sql.NullString
	if err := w.mbox.QueryRowContext(t.Context(), `SELECT CMINMSGS_PROC_NOTE FROM CMINMSGS WHERE CMINMSGS_ID = ?`, id).Scan(&note); err != nil {
		t.Fatal(err)
	}
	return note.String
}

// replayWhilePumping runs `flightfeed replay` and, once its request is
// recorded, a pump that applies it: the command waits for the outcome.
func (w replayWorld) replayWhilePumping(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(append([]string{"replay", "--config", w.cfg, "--timeout", "2m"}, args...)...)
		done <- result{code, out, errOut}
	}()
	await.Eventually(t, "the replay request is recorded", time.Minute, func() (bool, string) {
		select {
		case r := <-done: // refused at once
			done <- r
			return true, ""
		default:
		}
		n := w.query(t, `SELECT count(*)::text FROM replay_request`)
		return n != "0", n + " requests"
	})
	w.drain(t)
	r := <-done
	return r.code, r.out, r.err
}

// An FDEL frees the FLID that made a snapshot DEAD; the snapshot replayed
// as-new then succeeds: a new trace row, the original note updated (in
// PostgreSQL and the mailbox), the command printing the outcome. A second
// replay and a replay of a message that is not DEAD are refused at once.
func TestReplayAsNewAfterAnFDELFreedTheFLID(t *testing.T) {
	w := newReplayWorld(t, sisMessage(4, "FLOP", "FDEL", `<FLOP><FLID>2</FLID></FLOP>`))
	if got := w.query(t, `SELECT status || ' ' || reason FROM proc_state WHERE message_id = 2`); got != "DEAD SAME_FLID_ACROSS_OPERATION_DAYS" {
		t.Fatalf("row 2 is %s", got)
	}
	if got := w.query(t, `SELECT count(*)::text FROM flight_schd WHERE flid = 2`); got != "0" {
		t.Fatalf("FLID 2 not deleted: %s", got)
	}

	code, out, errOut := w.replayWhilePumping(t, "--id", "2", "--policy", "as-new")
	if code != 0 || !strings.Contains(out, "message 2 replayed as-new: SUCCEEDED") {
		t.Fatalf("replay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if d2, d3 := w.day(t, 2), w.day(t, 3); d2 != w.tomorrow || d3 != w.tomorrow {
		t.Errorf("FLIDs 2 and 3 belong to %s and %s, want %s", d2, d3, w.tomorrow)
	}
	if got := w.query(t, `SELECT string_agg(result, ',' ORDER BY id) FROM schd_snap_log WHERE msg_id = 2`); got != "ROLLED_BACK,COMMITTED" {
		t.Errorf("trace rows of message 2: %s", got)
	}
	if got := w.query(t, `SELECT status || ' ' || note FROM proc_state WHERE message_id = 2`); !strings.HasPrefix(got, "DEAD SAME_FLID") ||
		!strings.Contains(got, "replayed as-new at") || !strings.HasSuffix(got, "(request 1): SUCCEEDED") {
		t.Errorf("proc_state of message 2: %s", got)
	}
	if got := w.mailboxNote(t, 2); !strings.Contains(got, "replayed as-new at") {
		t.Errorf("mailbox note of row 2: %q", got)
	}
	if got := w.query(t, `SELECT count(*)::text FROM msg_event WHERE message_id = 2`); got == "0" {
		t.Error("the replay published no events")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--id", "2", "--policy", "as-new"}, "replay of message 2 refused: it was replayed already (request 1, result SUCCEEDED)"},
		{[]string{"--id", "3", "--policy", "as-new"}, "replay of message 3 refused: it is SUCCEEDED, not DEAD"},
		{[]string{"--id", "99", "--policy", "as-new"}, "replay of message 99 refused: this feed never processed"},
		{[]string{"--id", "4", "--policy", "skip-conflicts"}, "skip-conflicts is only for a DEAD(PROTOCOL) SAME_FLID_ACROSS_OPERATION_DAYS snapshot or a snapshot refused for a record's content (BAD_TIME, MISSING_FIELD, DUPLICATE_FIELD, BAD_STRUCTURE, SEQ_ZERO_MIXED, BAD_SEQUENCE), and this message is DEAD(MALFORMED_XML)"},
	} {
		code, _, errOut := runCLI(append([]string{"replay", "--config", w.cfg, "--timeout", "1s"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("replay %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
	if got := w.query(t, `SELECT count(*)::text FROM replay_request`); got != "1" {
		t.Errorf("%s replay requests recorded, want only the first", got)
	}
}

// skip-conflicts applies the confirmed day-mismatch snapshot as its day's
// without the conflicting FLID, which keeps its day and is listed in the
// trace row.
func TestReplaySkipConflictsLeavesTheConflictingFLIDsOut(t *testing.T) {
	w := newReplayWorld(t)
	version := w.query(t, `SELECT state_version::text FROM flight_schd WHERE flid = 2`)
	code, out, errOut := w.replayWhilePumping(t, "--id", "2", "--policy", "skip-conflicts")
	if code != 0 || !strings.Contains(out, "message 2 replayed skip-conflicts: SUCCEEDED (skip-conflicts: 1 FLID(s) of other operation days left out of the roster and untouched: 2)") {
		t.Fatalf("replay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if d2, d3 := w.day(t, 2), w.day(t, 3); d2 != w.today || d3 != w.tomorrow {
		t.Errorf("FLID 2 belongs to %s (want %s), FLID 3 to %s (want %s)", d2, w.today, d3, w.tomorrow)
	}
	if got := w.query(t, `SELECT state_version::text FROM flight_schd WHERE flid = 2`); got != version {
		t.Errorf("FLID 2 was touched: version %s, was %s", got, version)
	}
	if got := w.query(t, `SELECT string_agg(flid::text, ',' ORDER BY flid) FROM schd_gen_flid WHERE operation_day = $1`, w.tomorrow); got != "3" {
		t.Errorf("roster of %s: %s", w.tomorrow, got)
	}
	if got := w.query(t, `SELECT result || ' ' || detail FROM schd_snap_log WHERE msg_id = 2 ORDER BY id DESC LIMIT 1`); !strings.HasPrefix(got, "COMMITTED skip-conflicts: 1 FLID(s)") ||
		!strings.HasSuffix(got, ": 2") {
		t.Errorf("trace row of the replay: %s", got)
	}
}

// A replay nobody applies (no pump runs) times out, non-zero; the request
// stays pending and a second one is refused.
func TestReplayTimesOutWithoutAPump(t *testing.T) {
	w := newReplayWorld(t)
	code, _, errOut := runCLI("replay", "--config", w.cfg, "--id", "2", "--policy", "as-new", "--timeout", "300ms")
	if code == 0 || !strings.Contains(errOut, "replay request 1: no outcome within 300ms") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("replay", "--config", w.cfg, "--id", "2", "--policy", "as-new", "--timeout", "300ms")
	if code == 0 || !strings.Contains(errOut, "replay request 1 for it is still pending") {
		t.Fatalf("second request: exit %d, stderr %q", code, errOut)
	}
}

// as-new before the cause is fixed: the replay runs and the message is DEAD
// again, which the command reports with a non-zero exit; nothing changed.
func TestReplayAsNewBeforeTheCauseIsFixedIsDeadAgain(t *testing.T) {
	w := newReplayWorld(t)
	code, out, errOut := w.replayWhilePumping(t, "--id", "2", "--policy", "as-new")
	if code == 0 || !strings.Contains(out, "message 2 replayed as-new: DEAD (SAME_FLID_ACROSS_OPERATION_DAYS") ||
		!strings.Contains(errOut, "the message is DEAD again") {
		t.Fatalf("replay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if d2 := w.day(t, 2); d2 != w.today {
		t.Errorf("FLID 2 moved to %s", d2)
	}
	if got := w.query(t, `SELECT count(*)::text FROM flight_schd WHERE flid = 3`); got != "0" {
		t.Errorf("FLID 3 was written by a refused replay")
	}
	if got := w.query(t, `SELECT string_agg(result, ',' ORDER BY id) FROM schd_snap_log WHERE msg_id = 2`); got != "ROLLED_BACK,ROLLED_BACK" {
		t.Errorf("trace rows of message 2: %s", got)
	}
}
