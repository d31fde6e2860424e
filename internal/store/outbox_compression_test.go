package store_test

import (
	"testing"

	"github.com/flightfeed/flightfeed/internal/testsupport/storetest"
)

// TestOutboxDocumentsCompressWithLZ4: a fully populated flight's state
// (about 2.6 kB) is compressed when its outbox row is written; since 00032
// with lz4, several times cheaper for the writing backend than pglz, the
// server's default. A server without lz4 keeps pglz (skipped here).
func TestOutboxDocumentsCompressWithLZ4(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.skipWithoutLZ4()
	f.mustSnapshot(day9, storetest.FullRecord(121112312, day9, 1, "A1", false))
	if n := f.count(`SELECT count(*) FROM msg_event WHERE length(state) > 2000`); n == 0 {
		t.Fatal("no outbox row holds a state large enough to be compressed")
	}
	if n := f.count(`SELECT count(*) FROM msg_event WHERE pg_column_compression(state) IS DISTINCT FROM 'lz4' AND length(state) > 2000`); n != 0 {
		t.Errorf("%d outbox states compressed otherwise than with lz4", n)
	}
	if n := f.count(`SELECT count(*) FROM flight_change WHERE pg_column_compression(changes) IS NOT NULL
		AND pg_column_compression(changes) <> 'lz4'`); n != 0 {
		t.Errorf("%d history rows compressed otherwise than with lz4", n)
	}
}
