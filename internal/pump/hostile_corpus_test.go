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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
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
// undone.
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

// canaryFLID is the flight of the i-th canary.
func canaryFLID(i int) int { return 900_000 + i }

func (h *harness) putCanary(i int) int64 {
	return h.put(h.flop("ESTT", canaryFLID(i), fmt.Sprintf("<ESTT>09SEP26%04d</ESTT>", 900+i)))
}

// The hostile input corpus (testdata/hostile, issue 31 point 4): every
// body, stored byte for byte in a binary mailbox column, ends in the
// terminal result and reason its manifest names; the canaries between them
// succeed, the last one after every hostile case; flights other than the
// legal cases' are exactly those of the canaries alone, and the legal
// cases' values equal their input; the ledger equals the canaries'; no
// external entity or DTD is fetched; the heap stays bounded.
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
	h := newHarness(t, mailbox)
	// A binary column holds every body as its bytes (invalid UTF-8, UTF-16,
	// GBK); NULL is allowed for @NULL.
	if _, err := h.mbox.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGBLOB NULL`); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(cases))
	// The first canary is a full-day snapshot of day 9, so the ledger has
	// a day that the hostile snapshots (of day 9) must leave alone.
	canaries := []int64{h.putCanaryDay()}
	for i, c := range cases {
		if i%10 == 0 {
			canaries = append(canaries, h.putCanary(len(canaries)-1))
		}
		ids[i] = h.putBody(c.body)
	}
	canaries = append(canaries, h.putCanary(len(canaries)-1))

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
	h.drain(h.newPump())
	close(stop)
	sampled.Wait()
	t.Logf("%d hostile cases and %d canaries drained; peak heap in use %d MB (bound %d MB)",
		len(cases), len(canaries), peak.Load()>>20, hostileHeapBound>>20)
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

	// The legal cases' flights hold their input byte for byte.
	flights := h.flights()
	legal := map[flight.FLID]bool{}
	for _, c := range cases {
		if c.check == "-" {
			continue
		}
		flid, field, want, ok := c.wantValue(t)
		legal[flid] = true
		if !ok {
			continue
		}
		s, found := flights[flid]
		if got := s.Scalars[field]; !found || got != want {
			t.Errorf("%s: flight %d %s = %q, want %q", c.file, flid, field, got, want)
		}
	}

	// Every other flight, and the ledger, are those of the canaries alone.
	clean := newHarness(t, mailbox)
	clean.putCanaryDay()
	for i := range canaries[1:] {
		clean.putCanary(i)
	}
	clean.drain(clean.newPump())
	var others strings.Builder
	for _, line := range strings.SplitAfter(h.export(), "\n") {
		flid, ok := exportFLID(line)
		if line != "" && (!ok || !legal[flid]) {
			others.WriteString(line)
		}
	}
	// STATE_VERSION is one sequence for all flights: the legal cases took
	// some between the canaries.
	if got, want := withoutVersions(others.String()), withoutVersions(clean.export()); got != want {
		t.Errorf("flights besides the legal cases':\n%s\nwant the canaries':\n%s", got, want)
	}
	// The legal full-day snapshot of day 10 adds that day; day 9 is the
	// first canary's.
	ledger := strings.Builder{}
	if !strings.Contains(h.ledger(), `"day":"2026-09-10"`) {
		t.Errorf("the legal snapshot of day 10 is not in the ledger:\n%s", h.ledger())
	}
	for _, line := range strings.SplitAfter(h.ledger(), "\n") {
		if !strings.Contains(line, `"day":"2026-09-10"`) {
			ledger.WriteString(line)
		}
	}
	if !strings.Contains(clean.ledger(), `"day":"2026-09-09"`) {
		t.Fatalf("the canaries' ledger has no day 9:\n%s", clean.ledger())
	}
	if got, want := ledger.String(), clean.ledger(); got != want {
		t.Errorf("ledger:\n%s\nwant the canaries':\n%s", got, want)
	}
}

var stateVersion = regexp.MustCompile(`"STATE_VERSION":\d+`)

func withoutVersions(export string) string {
	return stateVersion.ReplaceAllString(normalize(export), `"STATE_VERSION":<n>`)
}

var exportFLIDField = regexp.MustCompile(`"FLID":"?(\d+)`)

func exportFLID(line string) (flight.FLID, bool) {
	m := exportFLIDField.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	return flight.FLID(n), err == nil
}
