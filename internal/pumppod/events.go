package pumppod

import (
	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pump"
)

// Reasons of the Kubernetes Events recorded on a FlightFeed (events.k8s.io,
// `kubectl events --for flightfeed/<name>`).
const (
	// ReasonLeaderElected (Normal): a replica took the Lease.
	ReasonLeaderElected = "LeaderElected"
	// ReasonLeadershipLost (Warning): the holder lost the Lease and stopped.
	ReasonLeadershipLost = "LeadershipLost"
	// ReasonSteppedDown (Normal): the holder stopped and released the Lease.
	ReasonSteppedDown = "SteppedDown"
	// ReasonPumpFailed (Warning): the pump stopped or could not start.
	ReasonPumpFailed = "PumpFailed"
	// ReasonPumpPanicked: the pump or its dispatcher panicked outside a
	// message; the pod restarts its pump with backoff.
	ReasonPumpPanicked = "PumpPanicked"
	// ReasonFenced (Warning): another pump took a newer fencing epoch.
	ReasonFenced = "Fenced"
	// ReasonSchemaTooNew and ReasonSchemaTooOld (Warning): the pump refuses
	// the database's schema (see the conditions' reasons of the same name).
	ReasonSchemaTooNew = "SchemaTooNew"
	ReasonSchemaTooOld = "SchemaTooOld"
	// ReasonConfigInvalid (Warning): the spec or a Secret keeps the feed
	// from running; the note names the field.
	ReasonConfigInvalid = "ConfigInvalid"
	// ReasonSecretNotLabeled (Warning): a referenced Secret lacks the label
	// flightfeed.aero/secret=true; the note names it and how to label it.
	ReasonSecretNotLabeled = string(v1alpha1.ReasonSecretNotLabeled)
	// ReasonSecretNotForFeed (Warning): a referenced Secret's annotation
	// flightfeed.aero/feeds does not name the feed (or is missing); the
	// note names the Secret, the feed and the kubectl annotate command.
	ReasonSecretNotForFeed = string(v1alpha1.ReasonSecretNotForFeed)
	// ReasonBrokersNotAllowed (Warning): the kafka.sasl Secret's annotation
	// flightfeed.aero/brokers does not allow every host of kafka.brokers
	// (or is missing): nothing was dialled; the note names the Secret, the
	// feed, the hosts and the kubectl annotate command.
	ReasonBrokersNotAllowed = string(v1alpha1.ReasonBrokersNotAllowed)
	// ReasonHeadBlocked (Warning) and ReasonHeadUnblocked (Normal): the
	// mailbox head started or stopped failing.
	ReasonHeadBlocked   = "HeadBlocked"
	ReasonHeadUnblocked = "HeadUnblocked"
	// ReasonDeadMessage (Warning): a message became DEAD.
	ReasonDeadMessage = string(pump.NoticeDead)
	// ReasonDayMismatch (Warning): SAME_FLID_ACROSS_OPERATION_DAYS.
	ReasonDayMismatch = string(pump.NoticeDayMismatch)
	// ReasonMailboxIDReused (Warning): the mailbox's ids restarted.
	ReasonMailboxIDReused = string(pump.NoticeIDReused)
	// ReasonSnapshotFlag (Warning): a snapshot's trace row carries a flag
	// (the Event's note names it).
	ReasonSnapshotFlag = string(pump.NoticeSnapshotFlag)
	// ReasonMessagePanicked (Warning): decoding or applying a message
	// panicked; it became DEAD (INTERNAL) and the pump went on.
	ReasonMessagePanicked = string(pump.NoticePanic)
	// ReasonSeqnRegression (Warning): an FLOP, ADFT or FDEL came with a
	// SEQN below its sender's previous one in the session.
	ReasonSeqnRegression = string(pump.NoticeSeqnRegression)
	// ReasonRequestFailed (Warning): the answers to a day's full-day
	// request were refused the same way twice in a row; the day is not
	// asked for again until an operator re-requests it.
	ReasonRequestFailed = string(pump.NoticeRequestFailed)
	// ReasonEventParked (Warning): the brokers refused an outbox event's
	// record for good and it was parked (KafkaDegraded).
	ReasonEventParked = "KafkaEventParked"
)

// maxNoticesPerReport bounds the Events one report records; the rest are
// summed up in one more.
const maxNoticesPerReport = 20
