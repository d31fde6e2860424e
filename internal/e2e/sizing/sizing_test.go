package sizing_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/sis/sistest"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/mysqltest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
	"github.com/flightfeed/flightfeed/internal/testsupport/proctest"
)

// chartMemoryLimit is the manager's memory limit in the Helm chart's
// default values.
const chartMemoryLimit = 512 << 20

// cgroupRoot is the cgroup v1 memory hierarchy of this machine kind.
const cgroupRoot = "/sys/fs/cgroup/memory"

func TestPumpDrainsTheWorstAdmittedMessagesIn512MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("drains about 120 MB of messages in a memory cgroup")
	}
	cg := newMemoryCgroup(t, chartMemoryLimit)
	binary := proctest.Binary(t)
	mdsn, pdsn := mysqltest.NewMailbox(t), pgtest.New(t)
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

	type row struct {
		name string
		body []byte
	}
	rows := []row{
		{"full-day DNLD of 9,999 fully populated flights", sistest.DNLD(9999)},
		{"DNLD window with 499,000 unmapped empty elements", unmappedElements(50, 9_980)},
		{"DNLD window with 249,000 gate items", manyItems(498, 500)},
		{"FLOP with 63 attributes on each of 6,000 items", manyAttributes(12, 500, 63)},
	}
	for i := range 40 {
		rows = append(rows, row{fmt.Sprintf("ordinary DNLD %d of 40 (9,999 short records)", i+1), shortDNLD(9999, i)})
	}
	var total int
	for _, r := range rows {
		if _, err := mbox.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG) VALUES (?)`, r.body); err != nil {
			t.Fatalf("insert %s (%d bytes): %v", r.name, len(r.body), err)
		}
		total += len(r.body)
	}
	t.Logf("mailbox: %d messages, %.1f MB", len(rows), float64(total)/1e6)

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
	cmd := exec.CommandContext(ctx, "sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`,
		"sh", cg, binary, "pump", "--config", cfg, "--drain")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	peak := int64(0)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss << 10
		}
	}
	kills := oomKills(t, cg)
	t.Logf("pump --drain: %s, peak RSS %d MiB, cgroup peak %d MiB, OOM kills %d", took.Round(time.Millisecond),
		peak>>20, readInt(t, filepath.Join(cg, "memory.max_usage_in_bytes"))>>20, kills)
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
			t.Errorf("%s: %s %s", rows[i].name, result, note)
		}
		results[result]++
		i++
	}
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if results["SUCCEEDED"] != len(rows) {
		t.Fatalf("results %v, want %d SUCCEEDED", results, len(rows))
	}
}

// newMemoryCgroup makes a memory cgroup with limit bytes and no swap; it
// is removed when the test ends.
func newMemoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cgroupRoot, "memory.limit_in_bytes")); err != nil {
		t.Fatalf("no cgroup v1 memory hierarchy at %s (this test creates a memory cgroup; run it as root on a cgroup v1 host): %v", cgroupRoot, err)
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("flightfeed-sizing-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("create memory cgroup (run as root): %v", err)
	}
	t.Cleanup(func() {
		// The cgroup goes once its process has exited; give it a moment.
		for range 50 {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("memory cgroup %s left behind", dir)
	})
	write := func(file string, v int64) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0o600); err != nil {
			t.Fatalf("set %s: %v", file, err)
		}
	}
	write("memory.limit_in_bytes", limit)
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		write("memory.memsw.limit_in_bytes", limit)
	}
	return dir
}

func oomKills(t *testing.T, cg string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg, "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	// Older kernels have no oom_kill line; the failure count says whether
	// the limit was hit at all (a kill shows as the pump's exit too).
	return 0
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
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
