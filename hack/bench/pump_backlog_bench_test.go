package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pump/pgstore"
	"github.com/flightfeed/flightfeed/internal/recsize"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// BenchmarkPumpBacklog drains a backlog of mixed FLOP messages over 2,000
// flights (default 50,000; FLIGHTFEED_BENCH_MESSAGES overrides) through the
// real pump — decoded, applied, committed and written back — and reports
// messages/s against `pgbench -c 1 -j 1 -N` TPS measured in the same run:
// the ceiling of one transaction per message on this PostgreSQL.
//
//	go test -bench PumpBacklog -run '^$' -benchtime 1x ./hack/bench/
func BenchmarkPumpBacklog(b *testing.B) {
	messages := 50000
	if v, err := strconv.Atoi(os.Getenv("FLIGHTFEED_BENCH_MESSAGES")); err == nil && v > 0 {
		messages = v
	}
	const flights = 2000
	tps := pgbenchTPS(b)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		feed, mbox := backlogFeed(b)
		fillBacklog(b, mbox, messages, flights)
		st, err := feedrun.Open(context.Background(), feed)
		if err != nil {
			b.Fatal(err)
		}
		// The mailbox and the door as feedrun wires them.
		mb, err := mailbox.OpenFeed(context.Background(), feed)
		if err != nil {
			b.Fatal(err)
		}
		door, err := recsize.New(int(feed.Spec.Kafka.MaxRecordBytes), feed.Spec.Kafka.Compression)
		if err != nil {
			b.Fatal(err)
		}
		p, err := pump.New(context.Background(), pump.Options{Feed: feedrun.PumpFeed(feed), Store: pgstore.New(st), Inbox: mb, Door: door, Identity: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := p.Drain(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		status := p.Status()
		_ = mb.Close()
		st.Close()
		if status.Counts["SUCCEEDED"] != int64(messages) {
			b.Fatalf("drained %v, want %d SUCCEEDED", status.Counts, messages)
		}
	}
	rate := float64(messages*b.N) / total.Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(tps, "pgbench-tps")
	b.ReportMetric(rate/tps, "x-pgbench")
}

func backlogFeed(b *testing.B) (*config.Feed, *sql.DB) {
	mdsn, pdsn := mailboxtest.NewMailbox(b), pgtest.New(b)
	feed, err := config.Parse([]byte(fmt.Sprintf(`airport: {iata: PEK}
mailbox: {dsn: %q, batchSize: 500}
database: {dsn: %q}
kafka: {brokers: ["127.0.0.1:9092"]}
requests: {disabled: true}
history: {disabled: true}
`, mdsn, pdsn)))
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("mysql", mdsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return feed, db
}

// fillBacklog writes messages FLOPs of a few kinds over flights flights.
func fillBacklog(b *testing.B, db *sql.DB, messages, flights int) {
	r := rand.New(rand.NewPCG(1, 2))
	kinds := []func(int) string{
		func(i int) string { return fmt.Sprintf("<ESTT>09SEP26%02d%02d</ESTT>", 6+i%12, i%60) },
		func(i int) string { return fmt.Sprintf(`<GTDT GTNO="1"><GATE>A%d</GATE><GTYP>D</GTYP></GTDT>`, i%40) },
		func(i int) string { return fmt.Sprintf("<STND>%d</STND>", 100+i%300) },
		func(i int) string { return fmt.Sprintf(`<DELY CODE="81" DURA="00%02d">ATC</DELY>`, i%60) },
		func(i int) string {
			return fmt.Sprintf(`<CKDT CKNO="1"><CHKC>%02d</CHKC></CKDT><CKDT CKNO="2"><CHKC>%02d</CHKC></CKDT>`, i%30, i%30+1)
		},
	}
	styps := []string{"ESTT", "GTDT", "STND", "DELY", "CKDT"}
	const chunk = 1000
	base := time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)
	for start := 0; start < messages; start += chunk {
		var rows []mailbox.Inbound
		for i := start; i < min(start+chunk, messages); i++ {
			k := r.IntN(len(kinds))
			body := fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909100000</DDTM><TYPE>FLOP</TYPE><STYP>%s</STYP></META><FLOP><FLID>%d</FLID>%s</FLOP></MSG>`,
				i%999999+1, styps[k], 1+r.IntN(flights), kinds[k](i))
			rows = append(rows, mailbox.Inbound{Received: base.Add(time.Duration(i) * time.Millisecond), Body: body})
		}
		if _, err := mailbox.WriteInbound(context.Background(), db, rows...); err != nil {
			b.Fatal(err)
		}
	}
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+)`)

// pgbenchTPS measures the one-transaction-per-message ceiling: pgbench
// with one client, simple-update transactions, for 10 s.
func pgbenchTPS(b *testing.B) float64 {
	dsn := pgtest.New(b)
	if out, err := exec.Command("pgbench", "-i", "-q", dsn).CombinedOutput(); err != nil {
		b.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	out, err := exec.Command("pgbench", "-c", "1", "-j", "1", "-N", "-T", "10", dsn).CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		b.Fatalf("no tps in pgbench output:\n%s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		b.Fatal(err)
	}
	return tps
}
