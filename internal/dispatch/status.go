package dispatch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
)

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
