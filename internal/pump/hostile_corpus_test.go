package pump_test

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
)

// hostileCase is one line of testdata/hostile/expected.tsv.
type hostileCase struct {
	file, result, reason, check, desc string
	body                              []byte // nil for @NULL
}

const hostileDir = "testdata/hostile"

// hostileMaxMessageBytes is mailbox.maxMessageBytes of the corpus run: the
// oversize cases are generated just beyond it instead of checked in.
const hostileMaxMessageBytes = 1 << 20

// hostileHeapBound bounds the pump's heap while it drains the corpus.
const hostileHeapBound = 300 << 20

var (
	repeatTemplate = regexp.MustCompile(`\{\{(\d+)\*([^{}]*)\}\}`)
	cdataSection   = regexp.MustCompile(`(?s)<!\[CDATA\[(.*?)\]\]>`)
)

// readHostileCorpus reads the manifest and the bodies, expanding templates.
func readHostileCorpus(t *testing.T, listener string) []hostileCase {
	t.Helper()
	f, err := os.Open(filepath.Join(hostileDir, "expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var cases []hostileCase
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("expected.tsv: %d fields in %q", len(fields), line)
		}
		c := hostileCase{file: fields[0], result: fields[1], reason: fields[2], check: fields[3], desc: fields[4]}
		if c.reason == "-" {
			c.reason = ""
		}
		if seen[c.file] {
			t.Fatalf("expected.tsv names %s twice", c.file)
		}
		seen[c.file] = true
		if c.file != "@NULL" {
			body, err := os.ReadFile(filepath.Join(hostileDir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(c.file, ".tmpl") {
				body = repeatTemplate.ReplaceAllFunc(body, func(m []byte) []byte {
					sub := repeatTemplate.FindSubmatch(m)
					n, err := strconv.Atoi(string(sub[1]))
					if err != nil {
						t.Fatal(err)
					}
					return bytes.Repeat(sub[2], n)
				})
				body = bytes.ReplaceAll(body, []byte("{{LISTENER}}"), []byte(listener))
			}
			if body == nil {
				body = []byte{}
			}
			c.body = body
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every file of the folder is in the manifest.
	entries, err := os.ReadDir(hostileDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "expected.tsv" && !seen[e.Name()] {
			t.Fatalf("%s is not in expected.tsv", e.Name())
		}
	}
	return cases
}

// wantValue is what a check FLID/FIELD expects: the literal after "=", or
// the text between <FIELD> and </FIELD> in the body, CDATA and entities
// undone; for FLID/LIST.ATTR (an attribute of the first item of a list)
// the value of ATTR="…" in the body.
func (c hostileCase) wantValue(t *testing.T) (flight.FLID, string, string, bool) {
	t.Helper()
	spec, literal, hasLiteral := strings.Cut(c.check, "=")
	flidText, field, ok := strings.Cut(spec, "/")
	flid, err := strconv.ParseInt(flidText, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s: bad check %q", c.file, c.check)
	}
	if field == "-" {
		return flight.FLID(flid), "", "", false
	}
	if hasLiteral {
		return flight.FLID(flid), field, literal, true
	}
	if _, attr, isAttr := strings.Cut(field, "."); isAttr {
		m := regexp.MustCompile(`\s` + regexp.QuoteMeta(attr) + `="([^"]*)"`).FindSubmatch(c.body)
		if m == nil {
			t.Fatalf("%s: no attribute %s in the body", c.file, attr)
		}
		return flight.FLID(flid), field, html.UnescapeString(string(m[1])), true
	}
	_, rest, ok1 := bytes.Cut(c.body, []byte("<"+field+">"))
	inner, _, ok2 := bytes.Cut(rest, []byte("</"+field+">"))
	if !ok1 || !ok2 {
		t.Fatalf("%s: no <%s> in the body", c.file, field)
	}
	v := string(inner)
	if !cdataSection.MatchString(v) {
		v = html.UnescapeString(v)
	} else {
		v = cdataSection.ReplaceAllString(v, "$1")
	}
	return flight.FLID(flid), field, v, true
}

// putBody inserts a mailbox row holding body as raw bytes (nil: NULL).
func (h *harness) putBody(body []byte) int64 {
	h.t.Helper()
	if body == nil {
		return h.insertRow(mailbox.Inbound{Null: true})
	}
	return h.insertRow(mailbox.Inbound{Body: string(body)})
}

// putCanaryDay puts a full-day snapshot of day 9 (three flights).
func (h *harness) putCanaryDay() int64 {
	return h.put(h.schd("DNLD", fltr(canaryFLID(100), "CA100", "09"), fltr(canaryFLID(101), "CA101", "09"), fltr(canaryFLID(102), "CA102", "09")))
}

// putHostileRows puts the corpus into the mailbox between canaries: the
// first a full-day snapshot of day 9, so the ledger has a day that the
// hostile snapshots (of day 9) must leave alone, then one before every
// ten cases and one after the last. It returns the cases' mailbox ids and
// the canaries'.
func (h *harness) putHostileRows(cases []hostileCase) (ids, canaries []int64) {
	ids = make([]int64, len(cases))
	canaries = []int64{h.putCanaryDay()}
	for i, c := range cases {
		if i%10 == 0 {
			canaries = append(canaries, h.putCanary(len(canaries)-1))
		}
		ids[i] = h.putBody(c.body)
	}
	return ids, append(canaries, h.putCanary(len(canaries)-1))
}

// canaryFLID is the flight of the i-th canary.
func canaryFLID(i int) int { return 900_000 + i }

func (h *harness) putCanary(i int) int64 {
	return h.put(h.flop("ESTT", canaryFLID(i), fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 900+i)))
}

// The hostile input corpus (testdata/hostile): every
// body, stored byte for byte in a binary mailbox column, ends in the
// terminal result and reason its manifest names; the canaries between them
// succeed, the last one after every hostile case; every legal case's value
// equals its input; nothing else changed: the flights (whole), the outbox,
// the processing rows, the mailbox results and the ledger equal those of
// the same rows drained with the rejected ones deleted, and a rejected
// message has a DEAD processing row and no event; no external entity or
// DTD is fetched; the heap stays bounded. The dispatcher runs beside the
// pump, as `flightfeed pump --drain` runs them: both topics, read with
// read_committed, carry exactly the outbox's records (each once, in order
// per FLID, with its headers), the state topic converges to the export,
// and no record is a rejected message's. The same rows drained by the pump
// on its in-memory ports (internal/pump/pumptest) end the same: results,
// processing rows, flights, outbox and ledger.
//
// Not parallel: the heap sampled is the whole test binary's, and the
// parallel tests of the package wait until this one is done.
func TestHostileCorpus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fetched.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	cases := readHostileCorpus(t, ln.Addr().String())
	if len(cases) < 60 {
		t.Fatalf("%d cases, want at least 60", len(cases))
	}

	mailbox := fmt.Sprintf("mailbox: {maxMessageBytes: %d, dnldFullDay: true}", hostileMaxMessageBytes)
	brokers := kafkatest.New(t, hostileStateTopic, hostileNoticeTopic)
	kafka := fmt.Sprintf("kafka: {brokers: [%q], topics: {state: %s, notice: %s}}", brokers[0], hostileStateTopic, hostileNoticeTopic)
	h := newHarness(t, mailbox, kafka)
	// A binary column holds every body as its bytes (invalid UTF-8, UTF-16,
	// GBK); NULL is allowed for @NULL.
	if _, err := h.mbox.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGBLOB NULL`); err != nil {
		t.Fatal(err)
	}
	ids, canaries := h.putHostileRows(cases)

	// The heap is the test binary's: what earlier tests left for the
	// collector (a full-day snapshot's, hundreds of MB under -race) would
	// count as this drain's until the next cycle. Collect it first, so the
	// peak is the drain's own.
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	h.drainAndDispatch()
	close(stop)
	sampled.Wait()
	t.Logf("%d hostile cases and %d canaries drained; peak heap in use %d MB (bound %d MB; %d MB in use before the drain)",
		len(cases), len(canaries), peak.Load()>>20, hostileHeapBound>>20, before.HeapInuse>>20)
	if peak.Load() > hostileHeapBound {
		t.Errorf("peak heap in use %d MB, bound %d MB", peak.Load()>>20, hostileHeapBound>>20)
	}

	for i, c := range cases {
		r := h.row(ids[i])
		if !r.Processed || r.Result != c.result || !strings.HasPrefix(r.Note, c.reason) || (c.reason == "" && r.Note != "") {
			t.Errorf("%s (%s): row %+v, want %s %q", c.file, c.desc, r, c.result, c.reason)
		}
	}
	// The archive holds every body as it was in the mailbox, byte for byte
	// (an oversize one is not read beyond the limit).
	for i, c := range cases {
		if c.body == nil || c.reason == "OVERSIZE" {
			continue
		}
		var archived []byte
		if err := h.db.QueryRow(t.Context(), `SELECT body FROM msg_archive WHERE message_id = $1`, ids[i]).Scan(&archived); err != nil {
			t.Errorf("%s: archive: %v", c.file, err)
		} else if !bytes.Equal(archived, c.body) {
			t.Errorf("%s: archived %d bytes that differ from the %d of the mailbox row", c.file, len(archived), len(c.body))
		}
	}
	for _, id := range canaries {
		if r := h.row(id); !r.Processed || r.Result != pumpdata.StatusSucceeded {
			t.Errorf("canary row %d: %+v", id, r)
		}
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the decoder connected %d times to the DTD/entity listener", n)
	}

	// The legal cases' flights hold their input byte for byte: every case
	// that succeeds names a value to check.
	flights := h.flights()
	for _, c := range cases {
		if c.check == "-" {
			if c.result == pumpdata.StatusSucceeded {
				t.Errorf("%s: a legal case that checks nothing: name FLID/FIELD in expected.tsv", c.file)
			}
			continue
		}
		flid, field, want, ok := c.wantValue(t)
		if !ok {
			t.Errorf("%s: check %q names no field: every legal case checks a value", c.file, c.check)
			continue
		}
		s, found := flights[flid]
		got := s.Scalars[field]
		if list, attr, isAttr := strings.Cut(field, "."); isAttr {
			got = ""
			if items := s.Lists[list]; len(items) > 0 {
				got = items[0][attr]
			}
		}
		if !found || got != want {
			t.Errorf("%s: flight %d %s = %q, want %q", c.file, flid, field, got, want)
		}
	}

	// Nothing else changed: the same rows with the rejected ones (DEAD)
	// deleted before the drain — the canaries and the legal cases alone,
	// under the same mailbox ids — leave the same flights (whole), the
	// same outbox (state events and notices), the same processing rows and
	// mailbox results for the rows they share, and the same ledger. A
	// rejected body that wrote a flight, queued an event or touched a
	// legal message's row shows here.
	ref := newHarness(t, mailbox)
	if _, err := ref.mbox.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGBLOB NULL`); err != nil {
		t.Fatal(err)
	}
	refIDs := []int64{ref.putCanaryDay()}
	var dead []int64
	for i, c := range cases {
		if i%10 == 0 {
			refIDs = append(refIDs, ref.putCanary(len(refIDs)-1))
		}
		id := ref.putBody(c.body)
		if id != ids[i] {
			t.Fatalf("%s: mailbox id %d in the reference run, %d in the corpus run", c.file, id, ids[i])
		}
		if c.result == pumpdata.StatusDead {
			dead = append(dead, id)
		}
	}
	refIDs = append(refIDs, ref.putCanary(len(refIDs)-1))
	if !slices.Equal(refIDs, canaries) {
		t.Fatalf("canary ids %v in the reference run, %v in the corpus run", refIDs, canaries)
	}
	if len(dead) == 0 || len(dead) == len(cases) {
		t.Fatalf("%d of %d cases rejected: the comparison needs both kinds", len(dead), len(cases))
	}
	deleteRows(t, ref, dead)
	ref.drain(ref.newPump())

	got, want := feedRowsOf(t, h, dead), feedRowsOf(t, ref, nil)
	for _, part := range []struct{ name, got, want string }{
		{"flights (export)", got.flights, want.flights},
		{"outbox (msg_event)", got.outbox, want.outbox},
		{"processing rows (proc_state)", got.procState, want.procState},
		{"mailbox results", got.mailbox, want.mailbox},
		{"ledger", got.ledger, want.ledger},
	} {
		if part.want == "" {
			t.Errorf("%s: the reference run has none, so the comparison proves nothing", part.name)
		}
		if part.got != part.want {
			t.Errorf("%s differ from the run without the rejected bodies:\n%s", part.name, lineDiff(part.got, part.want))
		}
	}
	lines := func(s string) int { return strings.Count(s, "\n") }
	t.Logf("compared with the run without the %d rejected rows: %d flights, %d outbox events, %d processing rows, %d mailbox rows, %d ledger days",
		len(dead), lines(want.flights), lines(want.outbox), lines(want.procState), lines(want.mailbox), lines(want.ledger))
	// The rejected rows themselves: DEAD with their reason, no event.
	var events int
	if err := h.db.QueryRow(t.Context(), `SELECT count(*) FROM msg_event_record WHERE message_id = ANY($1)`, dead).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 0 {
		t.Errorf("%d outbox events of rejected messages", events)
	}
	// What the topics carry is what the outbox holds, and no record is a
	// rejected message's.
	checkTopics(t, h, brokers, dead)

	// The pump on its ports in memory ends the same: the same rows under
	// the same ids leave the same results, processing rows, flights (whole),
	// outbox and ledger.
	mem := newMemHarness(t, mailbox, kafka)
	memIDs, memCanaries := mem.putHostileRows(cases)
	if !slices.Equal(memIDs, ids) || !slices.Equal(memCanaries, canaries) {
		t.Fatalf("mailbox ids %v and canaries %v in memory, %v and %v in MariaDB", memIDs, memCanaries, ids, canaries)
	}
	mem.drain(mem.newPump())
	if n := fetched.Load(); n != 0 {
		t.Errorf("the decoder connected %d times to the DTD/entity listener (with the in-memory run)", n)
	}
	onPostgres, inMemory := backendRowsOf(t, h), backendRowsOf(t, mem)
	for _, part := range []struct{ name, postgres, memory string }{
		{"mailbox results", onPostgres.mailbox, inMemory.mailbox},
		{"processing rows", onPostgres.procState, inMemory.procState},
		{"flights (export)", onPostgres.flights, inMemory.flights},
		{"outbox", onPostgres.outbox, inMemory.outbox},
		{"ledger", onPostgres.ledger, inMemory.ledger},
	} {
		if part.postgres == "" {
			t.Errorf("%s: none on PostgreSQL, so the comparison proves nothing", part.name)
		}
		if part.postgres != part.memory {
			t.Errorf("%s differ between the backends (this run: in memory; the reference: PostgreSQL):\n%s", part.name, lineDiff(part.memory, part.postgres))
		}
	}
	t.Logf("the in-memory backend compared: %d mailbox rows, %d processing rows, %d flights, %d outbox records, %d ledger days",
		lines(inMemory.mailbox), lines(inMemory.procState), lines(inMemory.flights), lines(inMemory.outbox), lines(inMemory.ledger))

	for i, c := range cases {
		if c.result != pumpdata.StatusDead {
			continue
		}
		var status, reason string
		if err := h.db.QueryRow(t.Context(), `SELECT status, coalesce(reason, '') FROM proc_state WHERE message_id = $1`, ids[i]).Scan(&status, &reason); err != nil {
			t.Errorf("%s: processing row: %v", c.file, err)
		} else if status != pumpdata.StatusDead || reason != c.reason {
			t.Errorf("%s: processing row %s %s, want DEAD %s", c.file, status, reason, c.reason)
		}
	}
}

// deleteRows deletes the mailbox rows ids before a drain.
func deleteRows(t *testing.T, h *harness, ids []int64) {
	t.Helper()
	marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	if _, err := h.mbox.Exec(`DELETE FROM CMINMSGS WHERE CMINMSGS_ID IN (`+marks+`)`, args...); err != nil {
		t.Fatal(err)
	}
}

// feedRows is what a drain left, as text to compare with another run's.
type feedRows struct {
	flights, outbox, procState, mailbox, ledger string
}

// feedRowsOf reads a drained harness's flights, outbox, processing rows,
// mailbox results and ledger, leaving out the rows of the messages skip.
// Times of processing are masked, and state versions are replaced by
// their rank among the flights' (the outbox's) versions: one sequence serves every flight
// and a rolled-back attempt consumes values, so two runs differ in the
// numbers but not in their order, nor in how many there are (one state
// published twice at one version shows).
func feedRowsOf(t *testing.T, h *harness, skip []int64) feedRows {
	t.Helper()
	ctx := t.Context()
	skipped := map[int64]bool{}
	for _, id := range skip {
		skipped[id] = true
	}
	var r feedRows
	var outbox strings.Builder
	rows, err := h.db.Query(ctx, `SELECT kind, event, flid, state_version, coalesce(operation_day::text, ''), message_id, payload
		FROM msg_event_record ORDER BY id, kind DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, event, day, payload string
		var flid, version, msg int64
		if err := rows.Scan(&kind, &event, &flid, &version, &day, &msg, &payload); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&outbox, "%s %s flid=%d STATE_VERSION:%d day=%s msg=%d %s\n", kind, event, flid, version, day, msg, payload)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var proc strings.Builder
	rows, err = h.db.Query(ctx, `SELECT message_id, coalesce(identity_key, ''), coalesce(encode(payload_digest, 'hex'), ''), coalesce(encode(content_digest, 'hex'), ''),
			coalesce(msg_type, ''), coalesce(msg_styp, ''), status, coalesce(reason, ''), coalesce(note, ''), flags, attempts, received_at
		FROM proc_state ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var key, digest, content, typ, styp, status, reason, note string
		var flags []string
		var attempts int
		var received time.Time
		if err := rows.Scan(&id, &key, &digest, &content, &typ, &styp, &status, &reason, &note, &flags, &attempts, &received); err != nil {
			t.Fatal(err)
		}
		if !skipped[id] {
			fmt.Fprintf(&proc, "%d %s %s %s %s/%s %s %s %q flags=%v attempts=%d received=%s\n",
				id, key, digest, content, typ, styp, status, reason, note, flags, attempts, received.UTC().Format(time.RFC3339Nano))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var mbox strings.Builder
	for _, line := range strings.SplitAfter(h.mailboxDump(), "\n") {
		id, _, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(id, 10, 64)
		if line != "" && (err != nil || !skipped[n]) {
			mbox.WriteString(line)
		}
	}
	r.mailbox, r.procState, r.ledger = mbox.String(), proc.String(), h.ledger()
	// Ranked apart, so that an extra event does not renumber the flights.
	r.flights, r.outbox = rankVersions(normalize(h.export())), rankVersions(normalize(outbox.String()))
	return r
}

var versionNumber = regexp.MustCompile(`"?STATE_VERSION"?:(\d+)`)

// rankVersions replaces every STATE_VERSION number in s by its rank (1 the
// lowest) among the distinct ones of s.
func rankVersions(s string) string {
	var seen []int64
	for _, m := range versionNumber.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		seen = append(seen, n)
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)
	return versionNumber.ReplaceAllStringFunc(s, func(m string) string {
		sub := versionNumber.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sub[1], 10, 64)
		i, _ := slices.BinarySearch(seen, n)
		return strings.Replace(m, sub[1], "#"+strconv.Itoa(i+1), 1)
	})
}

// lineDiff lists the lines only one of got and want has (at most 20 each).
func lineDiff(got, want string) string {
	var b strings.Builder
	only := func(sign, this, that string) {
		left := map[string]int{}
		for _, l := range strings.Split(that, "\n") {
			left[l]++
		}
		n := 0
		for _, l := range strings.Split(this, "\n") {
			if left[l] > 0 {
				left[l]--
			} else if n < 20 {
				b.WriteString(sign + l + "\n")
				n++
			}
		}
	}
	only("+ (this run only) ", got, want)
	only("- (the reference only) ", want, got)
	return b.String()
}
