package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flightfeed/flightfeed/internal/store"
)

// A new message of StreamArchiveMin bytes or more is archived by a
// streamed COPY (its body is not copied into a send buffer first) and
// reads back exactly as one archived by the INSERT: every byte of the body
// (NUL and invalid UTF-8 included), size, truncation, digest, received
// time. Said to be new but archived already, it fails the batch with a
// unique violation, as the INSERT does.
func TestLargeBodiesAreArchivedByStreamExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	received := time.Date(2026, 9, 9, 2, 3, 4, 567891000, time.UTC)
	large := make([]byte, store.StreamArchiveMin+17)
	for i := range large {
		large[i] = byte(i * 7)
	}
	rows := []store.ArchivedRow{
		{MessageID: 1, ReceivedAt: received, Size: 3, Body: []byte("<a>"), New: true},
		{MessageID: 2, ReceivedAt: received.Add(time.Second), Size: int64(len(large)), Body: large, New: true},
		{MessageID: 3, ReceivedAt: received, Size: 50 << 20, Body: large[:store.StreamArchiveMin], Truncated: true, New: true,
			Digest: []byte("given digest")},
		{MessageID: 4, ReceivedAt: received, Size: int64(len(large)), Body: large, New: false},
	}
	results := make([]store.Result, len(rows))
	for i, r := range rows {
		results[i] = store.Result{MessageID: r.MessageID, ReceivedAt: r.ReceivedAt, Type: "SCHD", Styp: "DNLD", Status: store.StatusSucceeded, New: r.New}
	}
	if err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(ctx, rows, nil, results) }); err != nil {
		t.Fatal(err)
	}
	type archived struct {
		Received  time.Time
		Size      int64
		Truncated bool
		Digest    []byte
		Body      []byte
	}
	for _, r := range rows {
		var got archived
		if err := f.conn.QueryRow(ctx, `SELECT received_at, byte_size, truncated, digest, body FROM msg_archive WHERE message_id = $1`,
			r.MessageID).Scan(&got.Received, &got.Size, &got.Truncated, &got.Digest, &got.Body); err != nil {
			t.Fatalf("message %d: %v", r.MessageID, err)
		}
		want := archived{Received: r.ReceivedAt, Size: r.Size, Truncated: r.Truncated, Digest: r.Digest, Body: r.Body}
		if want.Digest == nil {
			want.Digest = store.PayloadDigest(r.Body)
		}
		got.Received = got.Received.UTC()
		if !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("message %d: body of %d bytes read back differs from the %d archived", r.MessageID, len(got.Body), len(want.Body))
		}
		got.Body, want.Body = nil, nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("message %d (-want +got):\n%s", r.MessageID, diff)
		}
	}

	again := []store.ArchivedRow{{MessageID: 2, ReceivedAt: received, Size: int64(len(large)), Body: large, New: true}}
	err := f.inTx(func(tx *store.Tx) error { return tx.FinishBatch(context.Background(), again, nil, nil) })
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || !errors.Is(err, store.ErrNotNew) {
		t.Fatalf("a large message said to be new but archived: %v, want a unique violation (ErrNotNew)", err)
	}
}
