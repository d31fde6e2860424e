package sizing_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/sis/sistest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// chartMemoryLimit is the pump pods' memory limit in the Helm chart's
// default values (pump.resources.limits.memory; docs_test.go checks it).
const chartMemoryLimit = 512 << 20

// fullDayPeakBound is the most resident memory the pump may reach while
// it drains one full-day DNLD of 9,999 fully populated flights (31.5 MB)
// in the chart's default limit: the snapshot is applied in
// chunks, so its decoded records, merged states and events never all live
// at once.
const fullDayPeakBound = 300e6

// message is one mailbox body of the test.
type message struct {
	name string
	body []byte
}

func TestPumpDrainsTheWorstAdmittedMessagesIn512MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("drains about 120 MB of messages in a memory cgroup")
	}
	msgs := []message{
		{"full-day DNLD of 9,999 fully populated flights", sistest.DNLD(9999)},
		{"DNLD window with 499,000 unmapped empty elements", unmappedElements(50, 9_980)},
		{"DNLD window with 249,000 gate items", manyItems(498, 500)},
		{"FLOP with 63 attributes on each of 6,000 items", manyAttributes(12, 500, 63)},
	}
	for i := range 40 {
		msgs = append(msgs, message{fmt.Sprintf("ordinary DNLD %d of 40 (9,999 short records)", i+1), shortDNLD(9999, i)})
	}
	drainInCgroup(t, msgs)
}

// TestPumpAppliesAFullDayDNLDWithin300MB drains the full-day DNLD alone in
// the chart's 512 MiB limit, with the memory limit the binary sets itself
// from the cgroup (GOMEMLIMIT unset), and bounds the pump's peak RSS: the
// high-water mark of the process that drained exactly that message, which
// the test checks was applied (its 9,999 flights and their 19,998 events
// are in PostgreSQL).
func TestPumpAppliesAFullDayDNLDWithin300MB(t *testing.T) {
	if testing.Short() {
		t.Skip("drains a 31.5 MB message in a memory cgroup")
	}
	d := drainInCgroup(t, []message{{"full-day DNLD of 9,999 fully populated flights", sistest.DNLD(9999)}})
	pg, err := sql.Open("pgx", d.pdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pg.Close() }()
	var flights, events int
	if err := pg.QueryRow(`SELECT (SELECT count(*) FROM flight_schd),
		(SELECT count(*) FROM msg_event_record)`).Scan(&flights, &events); err != nil {
		t.Fatal(err)
	}
	if flights != 9999 || events != 2*9999 {
		t.Fatalf("after the drain: %d flights, %d outbox records (state and notice); want 9999 and %d", flights, events, 2*9999)
	}
	if d.peak <= 0 {
		t.Fatal("the pump's VmHWM was never read")
	}
	if d.peak > fullDayPeakBound {
		t.Errorf("full-day DNLD: peak RSS %.1f MB (%d MiB), want at most %.0f MB", float64(d.peak)/1e6, d.peak>>20, fullDayPeakBound/1e6)
	}
}

// drained is what drainInCgroup measured.
type drained struct {
	// peak is the pump process's peak RSS (its VmHWM; 0 if never read).
	peak int64
	took time.Duration
	// pdsn is the feed's PostgreSQL database.
	pdsn string
}

// drainInCgroup puts msgs in a fresh mailbox and runs the built `flightfeed
// pump --drain` over them inside a memory cgroup of the chart's default
// limit, with GOMEMLIMIT unset (the binary derives it from the cgroup); it
// fails the test unless the pump exits cleanly, unkilled, with every
// message SUCCEEDED.
func drainInCgroup(t *testing.T, msgs []message) drained {
	t.Helper()
	cg := proctest.MemoryCgroup(t, chartMemoryLimit)
	binary := proctest.Binary(t)
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	brokers := kafkatest.New(t, "KAFKA_SCHD", "KAFKA_MSG")

	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mbox.Close() }()
	// The full-day DNLD is 31.5 MB: more than MariaDB's default 16 MiB
	// packet. A mailbox that carries such messages needs a larger one.
	if _, err := mbox.Exec(`SET GLOBAL max_allowed_packet = 67108864`); err != nil {
		t.Fatal(err)
	}
	mbox.SetMaxIdleConns(0) // new connections see the new packet size

	var total int
	for _, m := range msgs {
		if _, err := mailbox.WriteInbound(context.Background(), mbox, mailbox.Inbound{Body: string(m.body)}); err != nil {
			t.Fatalf("insert %s (%d bytes): %v", m.name, len(m.body), err)
		}
		total += len(m.body)
	}
	t.Logf("mailbox: %d messages, %.1f MB", len(msgs), float64(total)/1e6)

	cfg := filepath.Join(t.TempDir(), "feed.yaml")
	doc := fmt.Sprintf(`airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: %q, pollInterval: 50ms}
database: {dsn: %q}
kafka: {brokers: [%q], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {disabled: true}
history: {disabled: true}
`, mdsn, pdsn, brokers[0])
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The shell joins the cgroup, then becomes the pump: the pump's every
	// allocation counts against the limit from its first instruction.
	argv := proctest.InCgroup(cg, binary, "pump", "--config", cfg, "--drain")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// The binary sets its soft memory limit from the cgroup's, as in a pod.
	cmd.Env = proctest.WithoutEnv(os.Environ(), "GOMEMLIMIT")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sampled := make(chan rssSample)
	stop := make(chan struct{})
	go func() { sampled <- sampleRSS(cmd.Process.Pid, stop) }()
	err = cmd.Wait()
	close(stop)
	parts := <-sampled
	d := drained{took: time.Since(start), pdsn: pdsn, peak: parts.hwm}
	kills := proctest.OOMKills(t, cg)
	t.Logf("pump --drain: %s, peak RSS %d MiB (%.1f MB; anonymous %.1f MB, file %.1f MB at most), cgroup peak %d MiB, OOM kills %d",
		d.took.Round(time.Millisecond), d.peak>>20, float64(d.peak)/1e6, float64(parts.anon)/1e6, float64(parts.file)/1e6,
		proctest.CgroupPeak(t, cg)>>20, kills)
	if err != nil || kills > 0 {
		t.Fatalf("pump --drain in %d MiB: %v, %d OOM kill(s)\n%s", chartMemoryLimit>>20, err, kills, proctest.Tail(out.String(), 40))
	}

	results := map[string]int{}
	q, err := mbox.Query(`SELECT coalesce(CMINMSGS_PROC_RESULT, 'UNPROCESSED'), coalesce(CMINMSGS_PROC_NOTE, '') FROM CMINMSGS ORDER BY CMINMSGS_ID`)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Close() }()
	i := 0
	for q.Next() {
		var result, note string
		if err := q.Scan(&result, &note); err != nil {
			t.Fatal(err)
		}
		if result != "SUCCEEDED" {
			t.Errorf("%s: %s %s", msgs[i].name, result, note)
		}
		results[result]++
		i++
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if results["SUCCEEDED"] != len(msgs) {
		t.Fatalf("results %v, want %d SUCCEEDED", results, len(msgs))
	}
	return d
}

// rssSample is what sampleRSS saw of the pump process: its high-water
// RSS (VmHWM) and the most anonymous and file-backed resident memory.
type rssSample struct{ hwm, anon, file int64 }

// sampleRSS reads /proc/PID/status of the pump every few milliseconds
// until stop is closed. Only samples of the flightfeed binary count (pid
// is the shell until it execs the pump), so VmHWM is the pump's own
// high-water mark. The process's rusage is no substitute: Go starts a child
// on the parent's memory (vfork), and the kernel keeps the parent's RSS at
// the exec as the child's ru_maxrss, so a test process that built 90 MB of
// messages would be measured, not the pump.
func sampleRSS(pid int, stop <-chan struct{}) rssSample {
	var s rssSample
	status := fmt.Sprintf("/proc/%d/status", pid)
	for {
		if b, err := os.ReadFile(status); err == nil {
			fields := map[string]string{}
			for _, line := range strings.Split(string(b), "\n") {
				if field, value, ok := strings.Cut(line, ":"); ok {
					fields[field] = strings.TrimSpace(value)
				}
			}
			if fields["Name"] == "flightfeed" {
				size := func(field string) int64 {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(fields[field], " kB"), 10, 64)
					return kb << 10
				}
				s.hwm = max(s.hwm, size("VmHWM"))
				s.anon = max(s.anon, size("RssAnon"))
				s.file = max(s.file, size("RssFile"))
			}
		}
		select {
		case <-stop:
			return s
		case <-time.After(5 * time.Millisecond):
		}
	}
}

const meta = `<META><SNDR>AODB</SNDR><RCVR>RMS</RCVR><SEQN>%d</SEQN><DDTM>20260909100000</DDTM><TYPE>%s</TYPE><STYP>%s</STYP></META>`

// unmappedElements is a DNLD window of records records carrying perRecord
// empty elements the module does not map each (the decoder's limits:
// 10,000 elements in a record, 500,000 unmapped in a message).
func unmappedElements(records, perRecord int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<MSG>"+meta+"<SCHD><RECS>%d</RECS>", 7001, "SCHD", "DNLD", records)
	for r := range records {
		fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><FLNO>HU%d</FLNO><SODT>09SEP261000</SODT>", 900000000+r, r)
		for i := range perRecord {
			fmt.Fprintf(&b, "<X%d/>", i%5000)
		}
		b.WriteString("</FLTR>")
	}
	b.WriteString("</SCHD></MSG>")
	return b.Bytes()
}

// manyItems is a DNLD window of records records with perRecord GTDT items
// each (the limits: 500 items of one field, 250,000 in a message).
func manyItems(records, perRecord int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<MSG>"+meta+"<SCHD><RECS>%d</RECS>", 7002, "SCHD", "DNLD", records)
	for r := range records {
		fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><FLNO>CA%d</FLNO><SODT>09SEP260800</SODT>", 800000000+r, r)
		for i := range perRecord {
			fmt.Fprintf(&b, `<GTDT GTNO="%d"><GATE>G%d</GATE></GTDT>`, i+1, i)
		}
		b.WriteString("</FLTR>")
	}
	b.WriteString("</SCHD></MSG>")
	return b.Bytes()
}

// manyAttributes is a DNLD window whose gate items carry attrs unmapped
// attributes each (the limit is 64 on one element).
func manyAttributes(records, perRecord, attrs int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<MSG>"+meta+"<SCHD><RECS>%d</RECS>", 7003, "SCHD", "DNLD", records)
	for r := range records {
		fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><FLNO>MU%d</FLNO><SODT>09SEP260900</SODT>", 810000000+r, r)
		for i := range perRecord {
			fmt.Fprintf(&b, `<GTDT GTNO="%d"`, i+1)
			for a := range attrs - 1 {
				fmt.Fprintf(&b, ` A%d="v"`, a)
			}
			fmt.Fprintf(&b, `><GATE>G%d</GATE></GTDT>`, i)
		}
		b.WriteString("</FLTR>")
	}
	b.WriteString("</SCHD></MSG>")
	return b.Bytes()
}

// shortDNLD is an ordinary window push of n short records, as AODBs send
// every few minutes (about 1.8 MB for 9,999); seq varies its SEQN and a
// remark so every push is its own message and changes its flights.
func shortDNLD(n, seq int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<MSG>"+meta+"<SCHD><RECS>%d</RECS>", 8000+seq, "SCHD", "DNLD", n)
	for r := range n {
		fmt.Fprintf(&b, "<FLTR><FLID>%d</FLID><FLNO>CZ%04d</FLNO><SODT>09SEP26%02d%02d</SODT><ACFT>A320</ACFT><REMC>p%d</REMC></FLTR>",
			700000000+r, r, r%24, r%60, seq)
	}
	b.WriteString("</SCHD></MSG>")
	return b.Bytes()
}
