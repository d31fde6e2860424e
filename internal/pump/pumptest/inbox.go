package pumptest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// Inbox is a mailbox in memory (pump.Inbox): its head rule is the
// mailbox's (FIFO, skip, bodies within the budget, a fresh read takes its
// first row whatever its size), and it records every read.
type Inbox struct {
	// The mutex guards the fields; a test holds it to read them while
	// a pump runs.
	sync.Mutex

	Rows    []pumpdata.Row
	Results map[int64]pumpdata.Backfill
	// Reads records every head read.
	Reads []HeadRead
	// FailBack is the number of write-backs still to refuse.
	FailBack int
	// Backs lists the ids of every write-back that landed, in order.
	Backs [][]int64
	// Outbound are the requests sent, in order (their id is index+1).
	Outbound []Outbound
}

// HeadRead is one head read.
type HeadRead struct {
	Budget  int64
	Skipped int64 // body bytes of the batch being applied (skip)
	Read    int64 // body bytes returned
	Rows    int
}

// Outbound is one request in the outbound table.
type Outbound struct {
	RoutingID string
	Body      []byte
	At        time.Time
}

// NewInbox is an empty mailbox.
func NewInbox() *Inbox { return &Inbox{Results: map[int64]pumpdata.Backfill{}} }

// Put appends a row with the next id, received at received.
func (m *Inbox) Put(body []byte, received time.Time) int64 {
	m.Lock()
	defer m.Unlock()
	id := int64(len(m.Rows) + 1)
	m.Rows = append(m.Rows, pumpdata.Row{ID: id, Received: received, Size: int64(len(body)), Body: body, Null: body == nil})
	return id
}

// Result is row id's written-back result (ok false while none).
func (m *Inbox) Result(id int64) (pumpdata.Backfill, bool) {
	m.Lock()
	defer m.Unlock()
	r, ok := m.Results[id]
	return r, ok
}

// Head reads the head as mailbox.Mailbox.Head does and records the read.
func (m *Inbox) Head(_ context.Context, limit int, budget, maxBytes int64, skip map[int64]bool) ([]pumpdata.Row, bool, error) {
	m.Lock()
	defer m.Unlock()
	rec := HeadRead{Budget: budget}
	var out []pumpdata.Row
	var total int64
	more := false
	for _, r := range m.Rows {
		if _, done := m.Results[r.ID]; done {
			continue
		}
		if skip[r.ID] {
			rec.Skipped += min(r.Size, maxBytes)
			continue
		}
		if len(out) == limit {
			break // more: said below
		}
		fetch := min(r.Size, maxBytes)
		if (len(out) > 0 || len(skip) > 0) && total+fetch > budget {
			more = true
			break
		}
		total += fetch
		if int64(len(r.Body)) > maxBytes {
			r.Body, r.Truncated = r.Body[:maxBytes], true
		}
		out = append(out, r)
	}
	rec.Read, rec.Rows = total, len(out)
	m.Reads = append(m.Reads, rec)
	// As the mailbox's LIMIT: a read of limit rows cannot tell whether
	// one follows.
	return out, more || len(out) == limit, nil
}

// errBackRefused is a write-back FailBack refuses.
var errBackRefused = errors.New("write-back refused")

// Backfill writes results to the rows with their id and received time
// (FailBack refuses the next ones).
func (m *Inbox) Backfill(_ context.Context, results []pumpdata.Backfill) error {
	m.Lock()
	defer m.Unlock()
	if m.FailBack > 0 {
		m.FailBack--
		return errBackRefused
	}
	ids := make([]int64, 0, len(results))
	for _, r := range results {
		// Only the row with this id and this received time (a row that
		// reused the id is another message).
		for _, row := range m.Rows {
			if row.ID == r.MessageID && row.Received.Equal(r.Received) {
				// The note as the mailbox's column holds it (valid UTF-8,
				// cut to its length), as the real mailbox writes it.
				r.Note = mailbox.FitNote(r.Note)
				m.Results[r.MessageID] = r
				ids = append(ids, r.MessageID)
			}
		}
	}
	m.Backs = append(m.Backs, ids)
	return nil
}

// Depth counts the rows without a result and gives the oldest one's
// receipt.
func (m *Inbox) Depth(context.Context) (int64, time.Time, error) {
	m.Lock()
	defer m.Unlock()
	var n int64
	var oldest time.Time
	for _, r := range m.Rows {
		if _, done := m.Results[r.ID]; !done {
			if n == 0 {
				oldest = r.Received
			}
			n++
		}
	}
	return n, oldest, nil
}

// SendRequest appends an outbound request; its id is its position.
func (m *Inbox) SendRequest(_ context.Context, routingID string, body []byte, now time.Time) (int64, error) {
	m.Lock()
	defer m.Unlock()
	m.Outbound = append(m.Outbound, Outbound{RoutingID: routingID, Body: bytes.Clone(body), At: now})
	return int64(len(m.Outbound)), nil
}

// FindRequest finds an outbound request of routingID sent at or after
// since whose body carries the SEQN seqn.
func (m *Inbox) FindRequest(_ context.Context, routingID, seqn string, since time.Time) (int64, bool, error) {
	m.Lock()
	defer m.Unlock()
	for i, o := range m.Outbound {
		if o.RoutingID == routingID && !o.At.Before(since) && bytes.Contains(o.Body, []byte("<SEQN>"+seqn+"</SEQN>")) {
			return int64(i + 1), true, nil
		}
	}
	return 0, false, nil
}
