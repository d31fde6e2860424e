package dispatch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// Reason classifies the last delivery error for status conditions.
type Reason string

// Reasons of Status.LastErrorReason.
const (
	// ReasonBrokerUnavailable: no broker answered (down, unreachable, or
	// the records timed out waiting for one).
	ReasonBrokerUnavailable Reason = "BrokerUnavailable"
	// ReasonTopicMissing: the topic does not exist (and auto-creation is
	// off, the default).
	ReasonTopicMissing Reason = "TopicMissing"
	// ReasonNotAuthorized: the broker refused the producer (ACLs).
	ReasonNotAuthorized Reason = "NotAuthorized"
	// ReasonAuthenticationFailed: SASL or TLS authentication failed.
	ReasonAuthenticationFailed Reason = "AuthenticationFailed"
	// ReasonDatabase: reading or marking the outbox failed.
	ReasonDatabase Reason = "DatabaseError"
	// ReasonProduceFailed: any other produce error.
	ReasonProduceFailed Reason = "ProduceFailed"
	// ReasonFenced: a newer leader of the feed fenced this dispatcher, at
	// the broker or in the database; it stopped for good.
	ReasonFenced Reason = "Fenced"
	// ReasonRecordTooLarge: the broker (or the producer) refused a record
	// as larger than the topic accepts (MESSAGE_TOO_LARGE); it is parked.
	ReasonRecordTooLarge Reason = "RecordTooLarge"
	// ReasonRecordInvalid: the broker refused a record as invalid
	// (INVALID_RECORD, CORRUPT_MESSAGE, INVALID_TIMESTAMP, …); it is parked.
	ReasonRecordInvalid Reason = "RecordInvalid"
)

// Parked describes an event the dispatcher parked.
type Parked struct {
	EventID      int64
	Kind         string
	FLID         flight.FLID
	StateVersion int64
	MessageID    int64
	Reason       Reason
	Error        string
	At           time.Time
}

// Status is a point-in-time report of the dispatcher for the status
// reporter and metrics.
type Status struct {
	// Pending counts PENDING outbox events (older versions waiting to be
	// superseded included), refreshed after passes at most every
	// Options.StatsInterval; OldestPendingAge is the age of the oldest.
	Pending          int64
	OldestPendingAge time.Duration
	// Inflight counts records sent and not yet answered by the broker.
	Inflight int
	// Delivered counts acknowledged records and Superseded the events
	// made obsolete by them, since the dispatcher started.
	Delivered, Superseded int64
	LastDeliveredAt       time.Time
	// Failing is true while the latest pass failed; FailingSince is when
	// the current run of failures began.
	Failing      bool
	FailingSince time.Time
	// LastError, LastErrorAt and LastErrorReason describe the latest
	// failure; they stay after a recovery (Failing says whether it lasts).
	LastError       string
	LastErrorAt     time.Time
	LastErrorReason Reason
	// BrokerError is the latest failed broker connection, empty once a
	// connection succeeds again; it is current even while a pass waits.
	BrokerError string
	// Stopped is true once the dispatcher stopped for good (fenced, or a
	// producer the broker refused for good); LastError says why and Run
	// returned it.
	Stopped bool
	// Transactional is true when each pass is one Kafka transaction
	// (kafka.transactions), false for the plain idempotent producer.
	Transactional bool
	// Parked counts PARKED events (refreshed with Pending); ParkedTotal
	// counts the events this dispatcher parked since it started, and
	// LastParked is the latest of them (nil when none).
	Parked      int64
	ParkedTotal int64
	LastParked  *Parked
	// ClientsRenewed counts the Kafka clients Run renewed since it started
	// (Options.Renew): a broker that refused the producer while this
	// dispatcher still led the feed. A steady rise means another producer
	// uses the feed's transactional id.
	ClientsRenewed int64
	// TopicLimit is a topic's max.message.bytes when the broker described
	// it smaller than kafka.maxRecordBytes (0 otherwise): the door uses it.
	TopicLimit int
}

// errDatabase marks failures of the outbox statements.
var errDatabase = errors.New("outbox database")

// classify names the kind of a delivery error.
func classify(err error) Reason {
	var (
		kErr      *kerr.Error
		certErr   *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
	)
	switch {
	case errors.Is(err, ErrFenced):
		return ReasonFenced
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return ReasonRecordTooLarge
	case permanentForRecord(err):
		return ReasonRecordInvalid
	case errors.Is(err, errDatabase):
		return ReasonDatabase
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		return ReasonTopicMissing
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return ReasonNotAuthorized
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism), errors.As(err, &certErr), errors.As(err, &unknownCA):
		return ReasonAuthenticationFailed
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, errUnacknowledged), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return ReasonBrokerUnavailable
	case errors.As(err, &kErr):
		return ReasonProduceFailed
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return ReasonBrokerUnavailable
	}
	return ReasonProduceFailed
}

func (d *Dispatcher) setInflight(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Inflight = n
}

func (d *Dispatcher) recordDelivered(delivered int, superseded int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Delivered += int64(delivered)
	d.status.Superseded += superseded
	if delivered > 0 {
		d.status.LastDeliveredAt = d.clock.Now()
	}
}

func (d *Dispatcher) recordParked(e store.OutboxEvent, errText string) {
	now := d.clock.Now()
	reason := ReasonRecordInvalid
	if strings.Contains(errText, kerr.MessageTooLarge.Message) || strings.Contains(errText, kerr.RecordListTooLarge.Message) {
		reason = ReasonRecordTooLarge
	}
	d.log.Error(errors.New(errText), "record refused for good: event parked", "flid", e.FLID.String(), "msg_id", e.MessageID,
		"kind", e.Kind, "state_version", e.StateVersion, "reason", string(reason), "bytes", len(e.Payload))
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Parked++
	d.status.ParkedTotal++
	d.status.LastParked = &Parked{EventID: e.ID, Kind: e.Kind, FLID: e.FLID, StateVersion: e.StateVersion,
		MessageID: e.MessageID, Reason: reason, Error: errText, At: now}
}

func (d *Dispatcher) recordSuccess() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status.Failing, d.status.FailingSince = false, time.Time{}
}

func (d *Dispatcher) recordFailure(err error) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.status.Failing {
		d.status.Failing, d.status.FailingSince = true, now
	}
	d.status.LastError, d.status.LastErrorAt, d.status.LastErrorReason = err.Error(), now, classify(err)
}
