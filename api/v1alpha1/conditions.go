package v1alpha1

// ConditionType names a FlightFeed condition (status.conditions[].type).
type ConditionType string

// The conditions of a FlightFeed. `kubectl wait --for=condition=Ready` is the
// one to wait on: it is True only while the elected pump runs this very
// generation of the spec and reaches all three services.
const (
	// ConditionReady: the pump runs the current spec and every service it
	// needs is reachable.
	ConditionReady ConditionType = "Ready"
	// ConditionPumpRunning: the Lease holder runs the pump.
	ConditionPumpRunning ConditionType = "PumpRunning"
	// ConditionMailboxReachable: the shared MySQL mailbox answers.
	ConditionMailboxReachable ConditionType = "MailboxReachable"
	// ConditionDatabaseReachable: the PostgreSQL state database answers.
	ConditionDatabaseReachable ConditionType = "DatabaseReachable"
	// ConditionKafkaReachable: the Kafka brokers answer.
	ConditionKafkaReachable ConditionType = "KafkaReachable"
	// ConditionDegraded: the pump runs but does not make progress as it
	// should (blocked head, backlog).
	ConditionDegraded ConditionType = "Degraded"
	// ConditionKafkaDegraded: outbox events are PARKED because the broker
	// refused their records for good (too large, invalid); the message
	// names the latest flight and reason (`flightfeed parked` lists them).
	ConditionKafkaDegraded ConditionType = "KafkaDegraded"
	// ConditionPlaintextDependency: a warning. True while the feed opted in
	// (mailbox.tls or database.tls mode: disable) to plain text and its DSN
	// reaches an address other than loopback without TLS; the message names
	// each such dependency and address.
	ConditionPlaintextDependency ConditionType = "PlaintextDependency"
	// ConditionUnverifiedTLSDependency: a warning. True while the feed
	// opted in (mailbox.tls or database.tls mode: unverified or disable)
	// and its DSN reaches an address over TLS without verifying the
	// server's certificate (sslmode require, prefer or allow beyond
	// loopback; tls=skip-verify or tls=preferred); the message names each
	// such dependency and address.
	ConditionUnverifiedTLSDependency ConditionType = "UnverifiedTLSDependency"
	// ConditionWeakDatabaseAuth: a warning. True while a database DSN's
	// require_auth (or $PGREQUIREAUTH) lets the client answer a server's
	// request for the password in clear text (password) or as an MD5 hash
	// (md5); the message names the DSN and the methods.
	ConditionWeakDatabaseAuth ConditionType = "WeakDatabaseAuth"
	// ConditionKafkaBrokersChanged: a warning. True while the current
	// generation changed kafka.brokers and kept kafka.sasl.secretRef, so the
	// same credentials now go to other hosts; the message names the old
	// and the new brokers (an Event of the same reason too).
	ConditionKafkaBrokersChanged ConditionType = "KafkaBrokersChanged"
)

// ConditionReason is the CamelCase reason of a condition.
type ConditionReason string

// Reasons. Each condition uses the subset its documentation names.
const (
	// ReasonRunning (Ready, PumpRunning True): the pump runs.
	ReasonRunning ConditionReason = "Running"
	// ReasonInvalidSpec (Ready, PumpRunning False): the spec does not
	// validate; the message names the field.
	ReasonInvalidSpec ConditionReason = "InvalidSpec"
	// ReasonSecretUnavailable (Ready, PumpRunning False): a referenced
	// Secret or key is missing.
	ReasonSecretUnavailable ConditionReason = "SecretUnavailable"
	// ReasonSecretNotLabeled (Ready, PumpRunning False): a referenced
	// Secret lacks the label SecretLabel=true, so the operator does not
	// use it; the message names the Secret and how to label it.
	ReasonSecretNotLabeled ConditionReason = "SecretNotLabeled"
	// ReasonSecretNotForFeed (Ready, PumpRunning False): a referenced
	// Secret's annotation FeedsAnnotation is missing or does not name the
	// feed, so the feed may not use it; the message names the Secret, the
	// feed and the kubectl annotate command its owner would run.
	ReasonSecretNotForFeed ConditionReason = "SecretNotForFeed"
	// ReasonBrokersNotAllowed (Ready, PumpRunning False): the SASL Secret's
	// annotation BrokersAnnotation is missing or does not list every host
	// of kafka.brokers, so its credentials are sent nowhere (nothing is
	// dialled); the message names the Secret, the feed and the hosts.
	ReasonBrokersNotAllowed ConditionReason = "BrokersNotAllowed"
	// ReasonInvalidSecret (Ready, PumpRunning False): a referenced Secret
	// holds a value that is refused, such as a DSN option that would let
	// a server read local files (docs/security.md); the message names the
	// Secret, the key and the option, never the DSN.
	ReasonInvalidSecret ConditionReason = "InvalidSecret"
	// ReasonPlaintextRefused (Ready, PumpRunning False): the mailbox or a
	// database DSN would send credentials and data in plain text to an
	// address other than loopback, and the feed did not opt in (mode:
	// disable); the message names the Secret, the key and the address.
	ReasonPlaintextRefused ConditionReason = "PlaintextRefused"
	// ReasonPlaintextOptedIn (PlaintextDependency True): the feed opted in
	// to plain text and uses it to the addresses the message names.
	ReasonPlaintextOptedIn ConditionReason = "PlaintextOptedIn"
	// ReasonUnverifiedTLSRefused (Ready, PumpRunning False): the mailbox
	// or a database DSN would reach an address over TLS without verifying
	// the server's certificate (sslmode require, prefer or allow beyond
	// loopback; tls=skip-verify or tls=preferred), and the feed did not
	// opt in (mode: unverified); the message names the Secret, the key and
	// the address.
	ReasonUnverifiedTLSRefused ConditionReason = "UnverifiedTLSRefused"
	// ReasonUnverifiedTLSOptedIn (UnverifiedTLSDependency True): the feed
	// opted in to TLS without verification and uses it to the addresses
	// the message names.
	ReasonUnverifiedTLSOptedIn ConditionReason = "UnverifiedTLSOptedIn"
	// ReasonPasswordAuthAllowed (WeakDatabaseAuth True): a database DSN's
	// require_auth permits password or md5 authentication.
	ReasonPasswordAuthAllowed ConditionReason = "PasswordAuthAllowed"
	// ReasonCredentialsMoved (KafkaBrokersChanged True): the message names
	// the brokers the SASL Secret went to before and goes to now.
	ReasonCredentialsMoved ConditionReason = "CredentialsMoved"
	// ReasonStarting (Ready, PumpRunning False): the leader is starting the
	// pump (migrations, fencing epoch, connections).
	ReasonStarting ConditionReason = "Starting"
	// ReasonPumpFailed (Ready, PumpRunning False): the pump stopped with an
	// error and is restarted with backoff.
	ReasonPumpFailed ConditionReason = "PumpFailed"
	// ReasonFenced (Ready, PumpRunning False): another pump took a newer
	// fencing epoch in the database.
	ReasonFenced ConditionReason = "Fenced"
	// ReasonNoLeader (Ready, PumpRunning False): the last holder stepped
	// down; the next one will report.
	ReasonNoLeader ConditionReason = "NoLeader"
	// ReasonTerminating (Ready, PumpRunning False): the FlightFeed is being
	// deleted and its pump stopped.
	ReasonTerminating ConditionReason = "Terminating"
	// ReasonSchemaTooNew (Ready, PumpRunning False): the database's schema
	// is newer than this release knows (an older release during a rolling
	// upgrade or after a rollback); the pump refuses to run on it and reads
	// nothing. status.schemaVersion is the database's version.
	ReasonSchemaTooNew ConditionReason = "SchemaTooNew"
	// ReasonSchemaTooOld (Ready, PumpRunning False): database.autoMigrate is
	// false and the database's schema is older than this release needs;
	// run `flightfeed migrate` (the chart's migration Job).
	ReasonSchemaTooOld ConditionReason = "SchemaTooOld"
	// ReasonServiceUnreachable (Ready False): the pump runs but a service
	// it needs does not answer.
	ReasonServiceUnreachable ConditionReason = "ServiceUnreachable"

	// ReasonReachable and ReasonUnreachable (the three *Reachable).
	ReasonReachable   ConditionReason = "Reachable"
	ReasonUnreachable ConditionReason = "Unreachable"
	// ReasonTransactionsOff (KafkaReachable True): Kafka answers, but
	// kafka.transactions is false, so a deposed leader's producer is not
	// fenced at the broker and can still publish older versions.
	ReasonTransactionsOff ConditionReason = "TransactionsOff"
	// ReasonNotRunning (*Reachable Unknown): no pump runs to check.
	ReasonNotRunning ConditionReason = "NotRunning"

	// ReasonHeadBlocked (Degraded True): the mailbox head keeps failing.
	ReasonHeadBlocked ConditionReason = "HeadBlocked"
	// ReasonMailboxIDsReused (Degraded True): a mailbox row reused the id of
	// another, already processed message within the last hour (the
	// mailbox's ids restarted); it was processed as a new message.
	ReasonMailboxIDsReused ConditionReason = "MailboxIDsReused"
	// ReasonRequestFailed (Degraded True): a day's full-day request FAILED
	// (its answers refused the same way twice); the day is not asked for
	// again until an operator re-requests it.
	ReasonRequestFailed ConditionReason = "RequestFailed"
	// ReasonAsExpected (Degraded, KafkaDegraded False).
	ReasonAsExpected ConditionReason = "AsExpected"
	// ReasonEventsParked (KafkaDegraded True): the broker refused records
	// for good and their events are parked.
	ReasonEventsParked ConditionReason = "EventsParked"
)

// Finalizer holds a FlightFeed until its pump is stopped and its Lease
// released.
const Finalizer = "flightfeed.aero/pump"

// SecretLabel must be "true" on every Secret a FlightFeed references: the
// operator reads only the Secrets a feed names (one get each, never a list
// or a watch) and uses only those an owner of the namespace marked for it,
// so a FlightFeed cannot hand it an arbitrary Secret of its namespace.
const SecretLabel = "flightfeed.aero/secret" //nolint:gosec // G101: a label key, not a credential

// FeedsAnnotation names, on a Secret, the FlightFeeds of its namespace that
// may use it: "pek,pvg", or "*" for every feed of the namespace. The label
// says the namespace lets FlightFeeds use the Secret at all; this says
// which. Whoever may write the Secret writes it, so a person who may only
// edit FlightFeeds cannot point a feed of theirs at another feed's
// credentials. Rules: package secretconsent.
const FeedsAnnotation = "flightfeed.aero/feeds"

// BrokersAnnotation lists, on a kafka.sasl Secret, the broker hosts its
// credentials may be sent to: "kafka-1.example:9093,kafka-2.example",
// a host with an optional port each. A feed whose kafka.brokers name any
// other host does not start and dials nothing. Rules: package
// secretconsent.
const BrokersAnnotation = "flightfeed.aero/brokers"
