package store

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/flightfeed/flightfeed/internal/config"
)

// Bounded reads ("bounded per feed"). pgx accepts a message of up
// to ~1 GiB from the server and allocates its body whole before reading it,
// so a database (or anything answering at its address) that announces a
// message of 900 MB costs the pump 900 MB per connection. Every connection
// the store opens (the pool's, Migrate's and SchemaVersion's) refuses a
// message larger than MessageBound(maxMessageBytes) when its header
// arrives, before anything is allocated for it.
//
// The largest message a legitimate database sends the store is one row of
// msg_archive read back for a replay: the raw mailbox body, at most
// mailbox.maxMessageBytes (a larger one is archived cut to that), as bytea
// in pgx's binary format (the bytes themselves), beside a timestamp and a
// boolean. Flight states and notices are far smaller (a state is a few
// kilobytes, and none may exceed kafka.maxRecordBytes), so are the
// aggregated id lists; lists are read row by row, never as one value. The
// bound follows the feed's maxMessageBytes and never falls below the
// default's (40 MiB): an unset option, and the one-off connections of the
// schema commands, get 41 MiB. That is one message in one connection's
// buffer: the pool's 4 connections hold at most 164 MiB at once in the
// worst case. With the mailbox's connections that does not fit every pod's
// memory limit, so the pump lowers the bound (Options.ReadCap) and the
// feed's maxMessageBytes to the share of its limit each connection may
// take (feedrun.FitReadCaps).

// MessageMargin is what MessageBound adds to the largest body: a DataRow's
// other columns and framing take a few dozen bytes.
const MessageMargin = 1 << 20

// MessageBound is the largest message body a connection of the store
// accepts from the server, for a feed whose mailbox.maxMessageBytes is
// maxMessageBytes (0: the default).
func MessageBound(maxMessageBytes int64) int64 {
	return max(maxMessageBytes, config.DefaultMaxMessageBytes) + MessageMargin
}

// MessageBoundError is a server message over the bound.
type MessageBoundError struct {
	// Type is the message's type byte; Size the body length it claims.
	Type  byte
	Size  int64
	Limit int64
}

func (e *MessageBoundError) Error() string {
	return fmt.Sprintf("database: server sent a message (type %q) of %d bytes, more than the limit of %d "+
		"(the feed's mailbox.maxMessageBytes, at least its default %d, + %d bytes)",
		e.Type, e.Size, e.Limit, config.DefaultMaxMessageBytes, MessageMargin)
}

// boundFrontend builds each connection's protocol reader under the bound:
// a reader that names the bound in its error (what pgx says alone is
// "invalid body length"), and pgproto3's own limit behind it.
func boundFrontend(maxMessageBytes int64) pgconn.BuildFrontendFunc {
	return boundFrontendCapped(maxMessageBytes, 0)
}

// boundFrontendCapped is boundFrontend with the bound lowered to readCap
// when that is positive and smaller.
func boundFrontendCapped(maxMessageBytes, readCap int64) pgconn.BuildFrontendFunc {
	limit := MessageBound(maxMessageBytes)
	if readCap > 0 {
		limit = min(limit, readCap)
	}
	return func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(&boundReader{r: r, limit: limit}, w)
		f.SetMaxBodyLen(int(limit))
		return f
	}
}

// boundReader follows the message headers in what the frontend reads (the
// plain text: pgx builds the frontend above TLS) and fails the read that
// brings a header claiming more than limit, so the frontend never reserves
// its body.
type boundReader struct {
	r     io.Reader
	limit int64
	// hdr holds nhdr bytes of a header (type, int32 length) split
	// between reads; left is what remains of the current body.
	hdr  [5]byte
	nhdr int
	left int64
	err  error
}

func (b *boundReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	for q := p[:n]; len(q) > 0; {
		if b.left > 0 {
			k := min(b.left, int64(len(q)))
			b.left -= k
			q = q[k:]
			continue
		}
		k := copy(b.hdr[b.nhdr:], q)
		b.nhdr += k
		q = q[k:]
		if b.nhdr < len(b.hdr) {
			break
		}
		b.nhdr = 0
		// A length below 4 is malformed; the frontend says so.
		// The header is a signed 32-bit length: a value past 2^31 is
		// negative on the wire and malformed, like one below 4.
		size := max(int64(int32(binary.BigEndian.Uint32(b.hdr[1:])))-4, 0) //nolint:gosec // G115: the protocol's signed length, read as the frontend reads it
		if size > b.limit {
			b.err = &MessageBoundError{Type: b.hdr[0], Size: size, Limit: b.limit}
			return 0, b.err
		}
		b.left = size
	}
	return n, err
}
