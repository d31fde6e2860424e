package mailbox_test

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
)

// A body larger than the server can send in one packet is read only up to
// that size and marked as cut by the packet limit: reading it whole would
// fail the head read every time and block the feed for good.
func TestHeadCutsBodiesAtThePacketLimit(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	m := openDefault(t, dsn)
	if mailbox.MaxFetch(m) <= 0 {
		t.Fatalf("max_allowed_packet not read: %d", mailbox.MaxFetch(m))
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	big, small := strings.Repeat("b", 100_000), "<MSG/>"
	mailboxtest.Write(t, db, mailboxtest.Bodies(big, small)...)
	// As if the server's max_allowed_packet were about 64 kB.
	mailbox.SetMaxFetch(m, 64<<10)
	rows, _, err := m.Head(t.Context(), 10, 1<<20, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if r := rows[0]; !r.Truncated || !r.PacketLimited || r.Size != 100_000 || len(r.Body) != 64<<10 || !bytes.Equal(r.Body, []byte(big[:64<<10])) {
		t.Fatalf("large row: truncated %v, packet-limited %v, size %d, %d bytes read", r.Truncated, r.PacketLimited, r.Size, len(r.Body))
	}
	if r := rows[1]; r.Truncated || r.PacketLimited || string(r.Body) != small {
		t.Fatalf("small row: %+v", r)
	}
	// The caller's own maximum, when lower, is not the packet's doing.
	rows, _, err = m.Head(t.Context(), 1, 1<<20, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; !r.Truncated || r.PacketLimited || len(r.Body) != 1000 {
		t.Fatalf("row cut by the caller's maximum: truncated %v, packet-limited %v, %d bytes", r.Truncated, r.PacketLimited, len(r.Body))
	}
}

// A binary body column (LONGBLOB) is read as its bytes: converting it
// "USING utf8mb4" replaced every byte that is not UTF-8 with '?', so a
// GBK body, UTF-16 or broken bytes reached the decoder as other, valid
// text. Sizes and the fetch limit count those bytes.
func TestHeadReadsABinaryBodyColumnAsItsBytes(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGBLOB NOT NULL`); err != nil {
		t.Fatal(err)
	}
	body := []byte("<MSG>\xff\xfe \xca\xd7\xb6\xbc \x00 \xe4\xb8</MSG>")
	mailboxtest.Write(t, db, mailbox.Inbound{Body: string(body)})
	m := openDefault(t, dsn)
	rows, _, err := m.Head(t.Context(), 10, 1<<20, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !bytes.Equal(rows[0].Body, body) || rows[0].Size != int64(len(body)) {
		t.Fatalf("rows %+v, want one of %q", rows, body)
	}
	rows, _, err = m.Head(t.Context(), 1, 1<<20, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; !r.Truncated || !bytes.Equal(r.Body, body[:8]) {
		t.Fatalf("cut at 8 bytes: truncated %v, body %q", r.Truncated, r.Body)
	}
}

// openDefault opens the mailbox dsn with the default layout, closed when
// the test ends.
func openDefault(t *testing.T, dsn string) *mailbox.Mailbox {
	t.Helper()
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	m, err := mailbox.Open(t.Context(), dsn, spec.Mailbox)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// A text body column reaches the pump as UTF-8 whatever its character
// set: a UTF-8 column (utf8mb4, utf8mb3) as its stored bytes, any other
// (GBK, Latin-1) converted by the server; sizes and the fetch limit count
// the UTF-8 bytes.
func TestHeadReadsEveryTextColumnAsUTF8(t *testing.T) {
	const text = "<MSG>首都 Zürich</MSG>" // 3-byte and 2-byte characters in UTF-8
	for _, tc := range []struct{ charset, text string }{
		{"utf8mb4", text},
		{"utf8mb3", text},
		{"gbk", "<MSG>首都</MSG>"},
		{"latin1", "<MSG>Zürich</MSG>"},
	} {
		t.Run(tc.charset, func(t *testing.T) {
			dsn := mailboxtest.NewMailbox(t)
			db, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			if _, err := db.Exec(`ALTER TABLE CMINMSGS MODIFY CMINMSGS_CLOB_MSG LONGTEXT CHARACTER SET ` + tc.charset + ` NOT NULL`); err != nil {
				t.Fatal(err)
			}
			mailboxtest.Write(t, db, mailbox.Inbound{Body: tc.text})
			m := openDefault(t, dsn)
			rows, _, err := m.Head(t.Context(), 10, 1<<20, 1<<20, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || string(rows[0].Body) != tc.text || rows[0].Size != int64(len(tc.text)) || rows[0].Truncated {
				t.Fatalf("rows %+v, want one of %q (%d bytes)", rows, tc.text, len(tc.text))
			}
			rows, _, err = m.Head(t.Context(), 1, 1<<20, 8, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := rows[0]; !r.Truncated || string(r.Body) != tc.text[:8] {
				t.Fatalf("cut at 8 bytes: truncated %v, body %q, want %q", r.Truncated, r.Body, tc.text[:8])
			}
		})
	}
}

// A head read says whether the head may hold rows it did not take: a read
// the limit or the byte budget stopped says more, one that took every row
// (or found none) does not, so the pump reads nothing ahead of it.
func TestHeadSaysWhetherRowsWereLeft(t *testing.T) {
	dsn := mailboxtest.NewMailbox(t)
	m := openDefault(t, dsn)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	head := func(limit int, budget int64, skip map[int64]bool) (int, bool) {
		t.Helper()
		rows, more, err := m.Head(t.Context(), limit, budget, 1<<20, skip)
		if err != nil {
			t.Fatal(err)
		}
		return len(rows), more
	}
	if n, more := head(10, 1<<20, nil); n != 0 || more {
		t.Fatalf("empty head: %d rows, more %v", n, more)
	}
	mailboxtest.Write(t, db, mailboxtest.Bodies(strings.Repeat("a", 600), strings.Repeat("b", 600), strings.Repeat("c", 600))...)
	for _, tc := range []struct {
		name   string
		limit  int
		budget int64
		skip   map[int64]bool
		rows   int
		more   bool
	}{
		{"every row taken", 10, 1 << 20, nil, 3, false},
		{"the limit left one", 2, 1 << 20, nil, 2, true},
		{"the limit reached", 3, 1 << 20, nil, 3, true},
		{"the budget left one", 10, 1300, nil, 2, true},
		{"the budget left every row beside a batch", 10, 500, map[int64]bool{1: true}, 0, true},
		{"every row beside a batch", 10, 1 << 20, map[int64]bool{1: true}, 2, false},
	} {
		if n, more := head(tc.limit, tc.budget, tc.skip); n != tc.rows || more != tc.more {
			t.Errorf("%s: %d rows, more %v; want %d, %v", tc.name, n, more, tc.rows, tc.more)
		}
	}
}
