package pump_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/reliability/check"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// crashWorkload is 2,000 messages over three days: full-day snapshots,
// FLOPs of several kinds, FDELs, ADFTs, re-sent copies and malformed rows.
func crashWorkload(h *harness) []string {
	r := rand.New(rand.NewPCG(7, 11))
	var out []string
	var last string
	for i := range 2000 {
		flid := 1 + r.IntN(150)
		var body string
		switch k := r.IntN(100); {
		case k < 4:
			dd := []string{"09", "10", "11"}[r.IntN(3)]
			var recs []string
			for j := range 20 + r.IntN(20) {
				// A day's flights are FLID%3 = its index, so days never collide.
				f := 3*j + map[string]int{"09": 1, "10": 2, "11": 3}[dd]
				recs = append(recs, fltr(f, fmt.Sprintf("CA%d", f), dd, fmt.Sprintf("<ESTT>%sSEP26%02d00</ESTT>", dd, 6+r.IntN(12))))
			}
			body = h.schd("DNLD", recs...)
		case k < 60:
			body = h.flop("ESTT", flid, fmt.Sprintf("<ESTT>09SEP26%02d%02d</ESTT>", 6+r.IntN(12), r.IntN(60)))
		case k < 80:
			body = h.flop("GTDT", flid, fmt.Sprintf(`<GTDT GTNO="1"><GATE>A%d</GATE></GTDT><GTDT GTNO="2"><GATE>B%d</GATE></GTDT>`, r.IntN(30), r.IntN(30)))
		case k < 88:
			body = h.flop("DELY", flid, fmt.Sprintf(`<DELY CODE="%d" DURA="0030">why</DELY>`, 80+r.IntN(10)))
		case k < 92:
			body = h.flop("FDEL", flid, "")
		case k < 95:
			body = h.schd("ADFT", fltr(1000+i, "ADHOC", "09"))
		case k < 98 && last != "":
			body = last // a re-sent copy
		default:
			body = `<MSG><META><SNDR>AODB</SNDR>` + strings.Repeat("x", r.IntN(50)) // malformed
		}
		out = append(out, body)
		last = body
	}
	return out
}

var versionField = regexp.MustCompile(`"STATE_VERSION":\d+,?|"UPDATED_AT":"[^"]*",?`)

// The pump is killed (SIGKILL) at random points of a 2,000-message run and
// restarted, 20 times; what a client sees afterwards equals an
// uninterrupted run's by the reliability suite's check.Compare: mailbox
// results, export, ledger, processing rows and both topics, where a
// notice under more versions than the clean run's is a message applied
// twice. (State versions differ between runs — a rolled-back transaction
// still consumes sequence values — so they are compared only for rising,
// not for equality.)
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the pump process 20 times in a 2,000-message run")
	}
	if os.Getenv(backendsEnv) == "memory" {
		// Before the binary is built (a minute): both runs need the real
		// services.
		t.Skipf("needs PostgreSQL and MariaDB (%s=memory)", backendsEnv)
	}
	t.Parallel()
	bin := proctest.Binary(t)
	// Both runs go through the binary, each with its own broker, so the
	// suite's comparison (check.Compare) sees everything a client sees:
	// mailbox results, export, ledger, processing rows and both topics.
	clean := newHarness(t, "mailbox: {dnldFullDay: true}")
	for _, m := range crashWorkload(clean) {
		clean.put(m)
	}
	cleanFeed := crashFeed(t, "clean", bin, clean)
	if out, err := exec.Command(bin, "pump", "--config", cleanFeed.Config, "--drain").CombinedOutput(); err != nil {
		t.Fatalf("clean pump: %v\n%s", err, out)
	}

	crashed := newHarness(t, "mailbox: {dnldFullDay: true}")
	for _, m := range crashWorkload(crashed) {
		crashed.put(m)
	}
	crashedFeed := crashFeed(t, "crashed", bin, crashed)
	cfg := crashedFeed.Config
	// Each kill lands after the run has made some progress, a random part
	// of what is left spread over the remaining kills, plus a random delay:
	// so the kills hit mid-run at any phase (inside a transaction, between
	// commit and write-back, during start-up) however fast the machine is.
	r := rand.New(rand.NewPCG(3, 5))
	kills, midRun := 0, 0
	var progress []int
	for kills < 20 {
		before := crashed.count(`SELECT count(*) FROM proc_state`)
		target := before + 1 + r.IntN(max(1, (2000-before)/(21-kills)))
		cmd := exec.Command(bin, "pump", "--config", cfg, "--drain")
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		finished := false
		deadline := time.Now().Add(time.Minute)
	wait:
		for time.Now().Before(deadline) {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pump exited: %v", err)
				}
				finished = true
				break wait
			case <-time.After(5 * time.Millisecond):
			}
			if crashed.count(`SELECT count(*) FROM proc_state`) >= target {
				break
			}
		}
		if finished {
			t.Logf("the run finished after %d kills; restarting for the remaining kills is moot", kills)
			break
		}
		time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		if err := <-done; err == nil {
			t.Log("the pump finished just before the kill")
		}
		kills++
		n := crashed.count(`SELECT count(*) FROM proc_state`)
		progress = append(progress, n)
		if n > before && n < 2000 {
			midRun++
		}
	}
	// The last start runs to the end.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "pump", "--config", cfg, "--drain").CombinedOutput(); err != nil {
		t.Fatalf("final pump: %v\n%s", err, out)
	}

	// Lost or doubly applied effects: the same mailbox results, export
	// (versions masked), ledger and processing rows, and per notice as
	// many versions as the uninterrupted run (more is a message applied
	// twice); each run's state records in version order per flight.
	check.Compare(check.Read(t, cleanFeed), check.Read(t, crashedFeed)).Assert(t, "after the kills")
	if n := crashed.count(`SELECT count(*) FROM backfill_todo`); n != 0 {
		t.Errorf("%d backfill intents left", n)
	}
	checkVersionsRise(t, crashed)
	t.Logf("killed %d times; messages with a result after each kill: %v", kills, progress)
	if midRun < 10 {
		t.Fatalf("only %d of the kills hit the run in the middle; the test proves too little", midRun)
	}
}

// crashFeed writes h's --config file for the binary (a fresh broker with
// both topics, requests and history off) and names it for check.Read.
func crashFeed(t *testing.T, name, bin string, h *harness) check.Feed {
	t.Helper()
	brokers := kafkatest.New(t, check.StateTopic, check.NoticeTopic)
	cfg := filepath.Join(t.TempDir(), name+".yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK}
mailbox: {dsn: %q, pollInterval: 10ms, batchSize: 5, dnldFullDay: true}
database: {dsn: %q}
kafka: {brokers: [%q], topics: {state: %s, notice: %s}}
requests: {disabled: true}
history: {disabled: true}
`, h.feed.Secrets.MailboxDSN, h.feed.Secrets.DatabaseDSN, brokers[0], check.StateTopic, check.NoticeTopic)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return check.Feed{Name: name, Binary: bin, Config: cfg, MailboxDSN: h.feed.Secrets.MailboxDSN,
		DatabaseDSN: h.feed.Secrets.DatabaseDSN, Brokers: brokers}
}

func checkVersionsRise(t *testing.T, h *harness) {
	t.Helper()
	rows, err := h.db.Query(t.Context(), `SELECT flid, state_version FROM msg_event_record WHERE kind = 'KAFKA_SCHD' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := map[int64]int64{}
	for rows.Next() {
		var flid, v int64
		if err := rows.Scan(&flid, &v); err != nil {
			t.Fatal(err)
		}
		if v <= last[flid] {
			t.Fatalf("flight %d: version %d after %d", flid, v, last[flid])
		}
		last[flid] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
