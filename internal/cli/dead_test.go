package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// deadWorld is a feed whose pump processed one good and three bad
// messages (rows 2, 3, 4 are DEAD).
func deadWorld(t *testing.T) (mailboxDSN, databaseDSN, broker, cfg string) {
	t.Helper()
	mailboxDSN, databaseDSN, broker = mailboxtest.NewMailbox(t), pgtest.New(t), kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")[0]
	cfg = writeFeed(t, mailboxDSN, databaseDSN, broker)
	mbox, err := sql.Open("mysql", mailboxDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	meta := func(seqn int, typ, styp string) string {
		return fmt.Sprintf(`<META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909101500</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`, seqn, typ, styp)
	}
	for i, body := range []string{
		`<MSG>` + meta(1, "FLOP", "ESTT") + `<FLOP><FLID>7</FLID><ESTT>09SEP260930</ESTT></FLOP></MSG>`,
		`not xml`,
		`<MSG>` + meta(2, "SCHD", "DNLD") + `<SCHD><RECS>2</RECS><FLTR><FLID>1</FLID><SODT>09SEP260800</SODT></FLTR></SCHD></MSG>`,
		`<MSG>` + meta(3, "FLOP", "ESTT") + `<FLOP><FLID>12AB</FLID></FLOP></MSG>`,
	} {
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Date(2026, 9, 9, 10, 0, i, 0, time.UTC), Body: body})
	}
	if code, _, errOut := runCLI("pump", "--config", cfg, "--drain"); code != 0 {
		t.Fatalf("pump --drain: exit %d: %s", code, errOut)
	}
	return mailboxDSN, databaseDSN, broker, cfg
}

// `flightfeed dead` lists DEAD and FAILED messages newest first, as a table
// or JSON lines, narrowed by --reason and --since.
func TestDeadListsDeadMessagesNewestFirst(t *testing.T) {
	_, _, _, cfg := deadWorld(t)
	code, out, errOut := runCLI("dead", "--config", cfg)
	if code != 0 {
		t.Fatalf("dead: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("dead table:\n%s", out)
	}
	for i, want := range []struct{ id, typ, reason string }{{"4", "FLOP/ESTT", "BAD_FLID"}, {"3", "SCHD/DNLD", "RECS_MISMATCH"}, {"2", "-", "MALFORMED_XML"}} {
		f := strings.Fields(lines[i+1])
		if len(f) < 7 || f[0] != want.id || f[3] != want.typ || f[4] != "DEAD" || f[5] != want.reason {
			t.Errorf("row %d = %q, want id %s, %s, DEAD, %s", i+1, lines[i+1], want.id, want.typ, want.reason)
		}
	}

	code, out, errOut = runCLI("dead", "--config", cfg, "--reason", "RECS_MISMATCH", "-o", "json")
	if code != 0 {
		t.Fatalf("dead -o json: exit %d: %s", code, errOut)
	}
	var doc struct {
		ID                       int64
		Type, Styp, Status, Note string
		Reason                   string
		ReceivedAt               string `json:"received_at"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("dead -o json: %v\n%s", err, out)
	}
	if doc.ID != 3 || doc.Type != "SCHD" || doc.Styp != "DNLD" || doc.Status != "DEAD" || doc.Reason != "RECS_MISMATCH" ||
		!strings.HasPrefix(doc.Note, "RECS_MISMATCH at MSG/SCHD/RECS") || doc.ReceivedAt == "" {
		t.Fatalf("dead -o json: %+v", doc)
	}

	if code, out, _ = runCLI("dead", "--config", cfg, "--since", "1h"); code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("dead --since 1h (the rows are from September): exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI("dead", "--config", cfg, "--since", "2026-09-01T00:00:00Z"); code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("dead --since 2026-09-01: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"--since", "yesterday"}, {"-o", "yaml"}, {"--feed", "pek"}} {
		if code, _, errOut := runCLI(append([]string{"dead", "--config", cfg}, bad...)...); code != exitUsage {
			t.Errorf("dead %v: exit %d (%s), want %d", bad, code, errOut, exitUsage)
		}
	}
}

// A window DNLD (records of two days) holding FLID 2, which a full-day
// snapshot of today already owns, under tomorrow is DEAD(PROTOCOL)
// SAME_FLID_ACROSS_OPERATION_DAYS (processing rules R5.3); `flightfeed dead` names
// the FLID with its stored and its message day, in JSON and in the table.
func TestDeadNamesTheFLIDsOfADayMismatch(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(loc)
	next := now.AddDate(0, 0, 1)
	today, tomorrow := now.Format(time.DateOnly), next.Format(time.DateOnly)
	window := sisMessage(2, "SCHD", "DNLD", "<SCHD><RECS>3</RECS>"+
		"<FLTR><FLID>3</FLID><SODT>"+sisDay(now)+"0900</SODT></FLTR>"+
		"<FLTR><FLID>2</FLID><SODT>"+sisDay(next)+"0800</SODT></FLTR>"+
		"<FLTR><FLID>4</FLID><SODT>"+sisDay(next)+"1000</SODT></FLTR></SCHD>")
	w := newReplayWorld(t, window) // row 5: the window DNLD
	if got := w.query(t, `SELECT status || ' ' || reason FROM proc_state WHERE message_id = 5`); got != "DEAD SAME_FLID_ACROSS_OPERATION_DAYS" {
		t.Fatalf("window DNLD: %s", got)
	}

	code, out, errOut := runCLI("dead", "--config", w.cfg, "--reason", "SAME_FLID_ACROSS_OPERATION_DAYS", "-o", "json")
	if code != 0 {
		t.Fatalf("dead -o json: exit %d: %s", code, errOut)
	}
	type conflict struct {
		FLID       string `json:"flid"`
		StoredDay  string `json:"stored_day"`
		MessageDay string `json:"message_day"`
	}
	var docs []struct {
		ID        int64
		Conflicts []conflict
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d struct {
			ID        int64
			Conflicts []conflict
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("dead -o json: %v\n%s", err, out)
		}
		docs = append(docs, d)
	}
	// Row 2 (full-day DNLD of tomorrow holding 2) and row 5 (the window).
	want := map[int64][]conflict{
		5: {{FLID: "2", StoredDay: today, MessageDay: tomorrow}},
		2: {{FLID: "2", StoredDay: today, MessageDay: tomorrow}},
	}
	if len(docs) != len(want) {
		t.Fatalf("dead -o json: %d messages, want %d\n%s", len(docs), len(want), out)
	}
	for _, d := range docs {
		if fmt.Sprint(d.Conflicts) != fmt.Sprint(want[d.ID]) {
			t.Errorf("message %d conflicts = %+v, want %+v\n%s", d.ID, d.Conflicts, want[d.ID], out)
		}
	}

	code, out, errOut = runCLI("dead", "--config", w.cfg)
	if code != 0 {
		t.Fatalf("dead: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if h := strings.Fields(lines[0]); len(h) != 9 || h[6] != "NOTE" || h[7] != "CONFLICTS" || h[8] != "REPLAYED" {
		t.Fatalf("dead table header %q", lines[0])
	}
	cell := "2:" + today + "->" + tomorrow
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		mismatch := f[5] == "SAME_FLID_ACROSS_OPERATION_DAYS"
		if last := f[len(f)-2]; (mismatch && last != cell) || (!mismatch && last != "-") {
			t.Errorf("dead table row %q: last column %q", l, last)
		}
	}

	// The runbook's next step once a person confirmed the rest of the
	// window: replay it without the conflicting FLID, which keeps its day.
	code, out, errOut = w.replayWhilePumping(t, "--id", "5", "--policy", "skip-conflicts")
	if code != 0 || !strings.Contains(out, "message 5 replayed skip-conflicts: SUCCEEDED") {
		t.Fatalf("replay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := w.query(t, `SELECT string_agg(flid || '=' || coalesce(operation_day::text, 'NULL'), ',' ORDER BY flid) FROM flight_schd WHERE flid IN (2, 3, 4)`); got != "2="+today+",3=NULL,4=NULL" {
		t.Errorf("after the replay: %s", got)
	}
	deadListsReplayed(t, w, 5, "2", "skip-conflicts")
}

// deadListsReplayed checks `flightfeed dead` once message id was replayed
// (SUCCEEDED) and message other was not: the list leaves id out and still
// names other; --replayed lists id too, with its replay's result, policy
// and time in JSON and RESULT@TIME in the table.
func deadListsReplayed(t *testing.T, w replayWorld, id int64, other, policy string) {
	t.Helper()
	code, out, errOut := runCLI("dead", "--config", w.cfg, "-o", "json")
	if code != 0 {
		t.Fatalf("dead after the replay: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, fmt.Sprintf(`"id":%d,`, id)) || !strings.Contains(out, `"id":`+other+`,`) {
		t.Fatalf("dead after replaying message %d lists it, or not message %s:\n%s", id, other, out)
	}
	code, out, errOut = runCLI("dead", "--config", w.cfg, "--replayed", "-o", "json")
	if code != 0 {
		t.Fatalf("dead --replayed: exit %d: %s", code, errOut)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d struct {
			ID     int64
			Status string
			Replay *struct {
				RequestID  int64     `json:"request_id"`
				Policy     string    `json:"policy"`
				Result     string    `json:"result"`
				FinishedAt time.Time `json:"finished_at"`
			}
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("dead --replayed -o json: %v\n%s", err, out)
		}
		if d.ID != id {
			continue
		}
		found = true
		if d.Status != "DEAD" || d.Replay == nil || d.Replay.RequestID == 0 || d.Replay.Policy != policy ||
			d.Replay.Result != "SUCCEEDED" || d.Replay.FinishedAt.IsZero() {
			t.Errorf("dead --replayed, message %d: %s", id, line)
		}
	}
	if !found {
		t.Fatalf("dead --replayed does not list message %d:\n%s", id, out)
	}
	code, out, errOut = runCLI("dead", "--config", w.cfg, "--replayed")
	if code != 0 {
		t.Fatalf("dead --replayed: exit %d: %s", code, errOut)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		replayed := f[len(f)-1]
		if mine := f[0] == fmt.Sprint(id); (mine && !strings.HasPrefix(replayed, "SUCCEEDED@")) || (!mine && replayed != "-") {
			t.Errorf("dead --replayed table row %q: REPLAYED %q", l, replayed)
		}
	}
}
