package mailbox

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/testsupport/mysqltest"
)

// A body larger than the server can send in one packet is read only up to
// that size and marked as cut by the packet limit: reading it whole would
// fail the head read every time and block the feed for good.
func TestHeadCutsBodiesAtThePacketLimit(t *testing.T) {
	dsn := mysqltest.NewMailbox(t)
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	m, err := Open(t.Context(), dsn, spec.Mailbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	if m.maxFetch <= 0 {
		t.Fatalf("max_allowed_packet not read: %d", m.maxFetch)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	big, small := strings.Repeat("b", 100_000), "<MSG/>"
	if _, err := db.Exec(`INSERT INTO CMINMSGS (CMINMSGS_CLOB_MSG) VALUES (?), (?)`, big, small); err != nil {
		t.Fatal(err)
	}
	// As if the server's max_allowed_packet were about 64 kB.
	m.maxFetch = 64 << 10
	rows, err := m.Head(t.Context(), 10, 1<<20, 1<<20, nil)
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
	rows, err = m.Head(t.Context(), 1, 1<<20, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; !r.Truncated || r.PacketLimited || len(r.Body) != 1000 {
		t.Fatalf("row cut by the caller's maximum: truncated %v, packet-limited %v, %d bytes", r.Truncated, r.PacketLimited, len(r.Body))
	}
}
