package pumpdata

import "time"

// Row is one inbound mailbox row at the FIFO head, as the mailbox reads
// it (the pump's Inbox.Head); what the pump writes back to it is a
// Backfill.
type Row struct {
	ID       int64
	Received time.Time
	// Size is the body's length in bytes.
	Size int64
	// Body is the raw message; for a row larger than the fetch limit it
	// holds only the first limit bytes and Truncated is set.
	Body      []byte
	Truncated bool
	// PacketLimited: the fetch limit was the mailbox server's
	// max_allowed_packet, lower than the caller's maximum.
	PacketLimited bool
	// Null: the body column is NULL (Body is empty).
	Null bool
}
