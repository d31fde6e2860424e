package store_test

import (
	"bytes"
	"testing"
)

// TestArchivedBodiesCompressWithLZ4: a large message's body (a full-day
// snapshot's megabytes) is compressed when it is archived; since 00033
// with lz4, several times cheaper for the writing backend than pglz, the
// server's default. A server without lz4 keeps pglz (skipped here).
func TestArchivedBodiesCompressWithLZ4(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.skipWithoutLZ4()
	body := bytes.Repeat([]byte(`<FLTR><FLID>121112312</FLID><FLNO>CA100</FLNO></FLTR>`), 2000)
	exec(t, f.conn, `INSERT INTO msg_archive (message_id, received_at, byte_size, digest, body) VALUES (1, now(), $1, '\x00', $2)`,
		len(body), body)
	var method string
	if err := f.conn.QueryRow(t.Context(), `SELECT coalesce(pg_column_compression(body), 'none') FROM msg_archive WHERE message_id = 1`).Scan(&method); err != nil {
		t.Fatal(err)
	}
	if method != "lz4" {
		t.Errorf("archived body compressed with %s, want lz4", method)
	}
}
