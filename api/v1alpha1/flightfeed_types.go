package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlightFeedSpec declares one AODB feed: where its shared mailbox is, the
// PostgreSQL database that keeps current flight state, and the Kafka topics
// that receive it. Credentials are never part of the spec: the mailbox and
// database DSNs and the Kafka TLS/SASL material come from Secrets in the
// FlightFeed's namespace. Every optional field has a documented default.
//
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.requests.horizon) || self.requests.horizon.from <= self.requests.horizon.to",message="must not be after requests.horizon.to",fieldPath=".requests.horizon.from"
type FlightFeedSpec struct {
	// Airport whose AODB this feed reads.
	Airport AirportSpec `json:"airport"`

	// Mailbox is the shared MySQL mailbox (inbound CMINMSGS, outbound COUTMSGS).
	Mailbox MailboxSpec `json:"mailbox"`

	// Database is the PostgreSQL database holding current flight state.
	Database DatabaseSpec `json:"database"`

	// Kafka receives full-state and change-notice events.
	Kafka KafkaSpec `json:"kafka"`

	// Requests controls the requests the pump sends: full-day schedules
	// (RQFD) and, when asked for, reference-data lists (RQRD).
	// +optional
	// +kubebuilder:default={}
	Requests RequestsSpec `json:"requests,omitempty"`

	// Retention bounds the ledger, trace log, archive and NULL-day flights.
	// +optional
	// +kubebuilder:default={}
	Retention RetentionSpec `json:"retention,omitempty"`

	// History controls when finished flights move to the history store.
	// +optional
	// +kubebuilder:default={}
	History HistorySpec `json:"history,omitempty"`

	// Pump tunes retries and backoff of the message pump.
	// +optional
	// +kubebuilder:default={}
	Pump PumpSpec `json:"pump,omitempty"`
}

// AirportSpec names the airport and the time zone its SIS times are in.
type AirportSpec struct {
	// IATA is the airport's three-letter IATA code.
	// +kubebuilder:validation:Pattern=`^[A-Z]{3}$`
	IATA string `json:"iata"`

	// TimeZone is the IANA zone of the airport's local times (SIS times and
	// operation days). Default Asia/Shanghai. Letters, digits and _+-/.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	// +kubebuilder:default="Asia/Shanghai"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+/-]+$`
	TimeZone string `json:"timeZone,omitempty"`
}

// SecretKeyRef selects one key of a Secret in the FlightFeed's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key inside the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// SecretRef names a whole Secret in the FlightFeed's namespace.
type SecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// MailboxSpec describes the shared MySQL mailbox. Table and column names
// default to the SIS layout (processing rules R2.2) and can be renamed one by one.
//
// +kubebuilder:validation:XValidation:rule="!has(self.idlePollInterval) || !self.idlePollInterval.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (has(self.pollInterval) && !self.pollInterval.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')) || duration(self.idlePollInterval) >= duration(has(self.pollInterval) ? self.pollInterval : '100ms')",message="must not be shorter than mailbox.pollInterval (default 100ms)",fieldPath=".idlePollInterval"
type MailboxSpec struct {
	// DSNSecretRef selects the go-sql-driver/mysql DSN
	// (user:pass@tcp(host:3306)/db) of the mailbox.
	DSNSecretRef SecretKeyRef `json:"dsnSecretRef"`

	// TLS to the mailbox server with a private CA and/or a client
	// certificate, always verified; it wins over the DSN's tls option.
	// Absent: as the DSN says (tls=true verifies against the system roots),
	// but a DSN without tls=true is refused unless its address is loopback,
	// and tls=skip-verify or tls=preferred (no certificate check) is refused
	// whatever the address. {mode: unverified} opts in to TLS without
	// verification, {mode: disable} to plain text (and unverified TLS), to
	// any address.
	// +optional
	TLS *ServerTLS `json:"tls,omitempty"`

	// Inbound names the inbound table and its columns.
	// +optional
	// +kubebuilder:default={}
	Inbound InboundTableSpec `json:"inbound,omitempty"`

	// Outbound names the outbound table and its columns.
	// +optional
	// +kubebuilder:default={}
	Outbound OutboundTableSpec `json:"outbound,omitempty"`

	// PollInterval is how long the pump waits when the mailbox head is
	// empty. A non-empty head is read again at once. Default 100ms.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1m'))",message="must be between 1ms and 1m"
	// +optional
	// +kubebuilder:default="100ms"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// IdlePollInterval is how long the pump waits between head reads once
	// the mailbox head has stayed empty for 10 seconds: an idle feed reads
	// its mailbox and runs its chores this often instead of every
	// pollInterval. The first row found brings the pump back to
	// pollInterval at once; only the first message after a quiet spell
	// waits up to this long. Equal to pollInterval, the pump never backs
	// off. Between pollInterval and 1m; default 1s (pollInterval when that
	// is longer).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1ms') && duration(self) <= duration('1m'))",message="must be between 1ms and 1m"
	// +optional
	IdlePollInterval *metav1.Duration `json:"idlePollInterval,omitempty"`

	// BatchSize is the most mailbox rows read and applied in one database
	// transaction (one savepoint per message). Default 1000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	// +kubebuilder:default=1000
	BatchSize int32 `json:"batchSize,omitempty"`

	// MaxMessageBytes rejects (DEAD, OVERSIZE) any message larger than this
	// before parsing it. Default 41943040 (40 MiB): a full-day DNLD of 9,999
	// fully populated flights is about 31.5 MB, and the decoder's element,
	// attribute and item limits bound what any admitted message costs in
	// memory. The mailbox server's max_allowed_packet must exceed it; a
	// larger row is refused as oversize.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	// +kubebuilder:default=41943040
	MaxMessageBytes int64 `json:"maxMessageBytes,omitempty"`

	// MaxBatchBytes bounds the message bodies in memory at once: the batch
	// being applied and the batch read ahead together stay within it; a
	// single larger message is read and applied alone. It bounds the pump's
	// memory by bytes, not rows (decoded messages take several times their
	// text). Default 16777216 (16 MiB).
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	// +kubebuilder:default=16777216
	MaxBatchBytes int64 `json:"maxBatchBytes,omitempty"`

	// DNLDFullDay treats a DNLD whose records all share one operation day as
	// a full-day snapshot of that day. Default false: a DNLD is the AODB's
	// scheduled window push and only upserts (processing rules R10.5).
	// +optional
	DNLDFullDay bool `json:"dnldFullDay,omitempty"`

	// RecsDropPercent raises the RECS_DROP alert (processing rules R5.6) on a
	// committed full-day snapshot whose roster is smaller than the day's
	// previous roster by more than this percentage of it. Default 20: a
	// day's plan keeps its cancelled flights (CNCL is a field), so between
	// two snapshots of a day it loses only what FDELs and identity changes
	// remove, a few percent; a fifth gone points at a partial or filtered
	// export (a terminal or an airline missing) long before the roster is
	// empty.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +kubebuilder:default=20
	RecsDropPercent int32 `json:"recsDropPercent,omitempty"`

	// DedupWindow is how long a re-sent copy (same SNDR|TYPE|STYP|SEQN and
	// content; the META send time may differ) is recognised and SKIPPED.
	// Default 24h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="24h"
	DedupWindow *metav1.Duration `json:"dedupWindow,omitempty"`
}

// InboundTableSpec names the inbound mailbox table (default CMINMSGS) and
// its columns. Every name must be a plain SQL identifier.
type InboundTableSpec struct {
	// Table is the inbound table the AODB writes messages into.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS"
	Table string `json:"table,omitempty"`
	// IDColumn is the auto-increment primary key; its value is the message id everywhere.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_ID"
	IDColumn string `json:"idColumn,omitempty"`
	// DateReceivedColumn is when the AODB wrote the row; FIFO order is (date received, id).
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_DATE_RECEIVED"
	DateReceivedColumn string `json:"dateReceivedColumn,omitempty"`
	// DateProcessedColumn is set when the result is written back (NULL = not consumed).
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_DATE_PROCESSED"
	DateProcessedColumn string `json:"dateProcessedColumn,omitempty"`
	// StatusColumn holds the row status; only rows whose status is ValidStatus are read.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_STATUS"
	StatusColumn string `json:"statusColumn,omitempty"`
	// BodyColumn holds the SIS message text.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_CLOB_MSG"
	BodyColumn string `json:"bodyColumn,omitempty"`
	// ResultColumn receives the processing result (SUCCEEDED, SKIPPED, DEAD, FAILED).
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_PROC_RESULT"
	ResultColumn string `json:"resultColumn,omitempty"`
	// NoteColumn receives the reason code and a short message for any result but SUCCEEDED.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="CMINMSGS_PROC_NOTE"
	NoteColumn string `json:"noteColumn,omitempty"`
	// ValidStatus is the status value of rows to read. Default VALID.
	// Letters, digits and _.:@#+=- (a mailbox code, never free text).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +optional
	// +kubebuilder:default="VALID"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@#+=-]+$`
	ValidStatus string `json:"validStatus,omitempty"`
}

// OutboundTableSpec names the outbound mailbox table (default COUTMSGS).
type OutboundTableSpec struct {
	// Table is the outbound table the pump writes full-day requests (RQFD) into.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="COUTMSGS"
	Table string `json:"table,omitempty"`
	// IDColumn is the auto-increment primary key.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="COUTMSGS_ID"
	IDColumn string `json:"idColumn,omitempty"`
	// DateInsertedColumn is when the pump wrote the request.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="COUTMSGS_DATE_INSERTED"
	DateInsertedColumn string `json:"dateInsertedColumn,omitempty"`
	// DateSentColumn is left NULL by the pump; the AODB side fills it.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="COUTMSGS_DATE_SENT"
	DateSentColumn string `json:"dateSentColumn,omitempty"`
	// RoutingIDColumn receives requests.routingId.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="ROUTINGID"
	RoutingIDColumn string `json:"routingIdColumn,omitempty"`
	// BodyColumn holds the request's SIS text.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`
	// +optional
	// +kubebuilder:default="COUTMSGS_CLOB_MSG"
	BodyColumn string `json:"bodyColumn,omitempty"`
}

// DatabaseSpec locates the PostgreSQL database (15 or newer).
type DatabaseSpec struct {
	// DSNSecretRef selects the pgx connection string
	// (postgres://user:pass@host:5432/db?sslmode=...).
	DSNSecretRef SecretKeyRef `json:"dsnSecretRef"`

	// ReadDSNSecretRef selects the connection string of a read-only role
	// for the read API (docs/security.md has the grants). Without it the
	// read API uses dsnSecretRef's role and opens every session with
	// default_transaction_read_only = on (status.readApi says which).
	// +optional
	ReadDSNSecretRef *SecretKeyRef `json:"readDsnSecretRef,omitempty"`

	// TLS to the database server (both DSNs) with a private CA and/or a
	// client certificate, always verified; it wins over the DSN's sslmode
	// (TLS is used even with sslmode=disable, and never falls back to
	// plain text). Absent: as the DSN's sslmode says, but a DSN that may
	// connect in plain text (sslmode disable, allow, prefer or none) or
	// over TLS without verifying the server (sslmode require, prefer or
	// allow) is refused unless every host is loopback; verify-ca and
	// verify-full pass. {mode: unverified} opts in to TLS without
	// verification, {mode: disable} to plain text (and unverified TLS), to
	// any host.
	// +optional
	TLS *ServerTLS `json:"tls,omitempty"`

	// MaxConns bounds the connection pool. Default 4.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=64
	// +optional
	// +kubebuilder:default=4
	MaxConns int32 `json:"maxConns,omitempty"`

	// AutoMigrate lets the pump apply the binary's pending migrations when
	// it starts (default true). false leaves migrations to `flightfeed
	// migrate` (the chart's opt-in pre-install/pre-upgrade Job): the pump
	// then refuses to run, with the condition reason SchemaTooOld, until
	// the schema is exactly the version it was built for. Either way it
	// refuses a schema newer than it knows (SchemaTooNew).
	// +optional
	// +kubebuilder:default=true
	AutoMigrate *bool `json:"autoMigrate,omitempty"`
}

// KafkaSpec locates the brokers and names the topics.
type KafkaSpec struct {
	// Brokers are the seed brokers, host:port.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9.-]+:[0-9]{1,5}$`
	// +kubebuilder:validation:items:MaxLength=259
	Brokers []string `json:"brokers"`

	// Topics receiving full state and change notices.
	// +optional
	// +kubebuilder:default={}
	Topics KafkaTopics `json:"topics,omitempty"`

	// ClientID sent to the brokers. Default flightfeed. Letters, digits and ._-.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	// +kubebuilder:default="flightfeed"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+$`
	ClientID string `json:"clientId,omitempty"`

	// TLS to the brokers; off when absent.
	// +optional
	TLS *KafkaTLS `json:"tls,omitempty"`

	// SASL authentication; off when absent.
	// +optional
	SASL *KafkaSASL `json:"sasl,omitempty"`

	// AllowAutoTopicCreation lets the producer create missing topics.
	// Default false: a missing topic is reported, not created.
	// +optional
	AllowAutoTopicCreation bool `json:"allowAutoTopicCreation,omitempty"`

	// Transactions publishes each dispatcher pass as one Kafka transaction
	// of a producer whose transactional.id belongs to the feed: the leader
	// that takes over fences the previous one at the broker, so a deposed
	// leader can never publish an older state of a flight. Consumers must
	// read with isolation.level=read_committed. Default true. false falls
	// back to the plain idempotent producer for brokers that refuse
	// transactions; then a paused ex-leader can still publish older
	// versions after its successor (the KafkaReachable condition says so).
	// +optional
	// +kubebuilder:default=true
	Transactions *bool `json:"transactions,omitempty"`

	// TransactionalIDPrefix starts the producer's transactional.id,
	// "<prefix>.<namespace>.<name>" for a FlightFeed (grant the producer
	// WRITE on transactional ids with this prefix). Default flightfeed.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,100}$`
	// +optional
	// +kubebuilder:default="flightfeed"
	TransactionalIDPrefix string `json:"transactionalIdPrefix,omitempty"`

	// MaxRecordBytes is the largest record the topics accept, as the
	// broker counts it (Kafka's max.message.bytes). A message whose flight
	// state or notice would make a larger record is DEAD
	// (STATE_TOO_LARGE) and changes nothing. The dispatcher compares it
	// with the topics' max.message.bytes when the broker describes them
	// and warns when a topic accepts less. Default 1048576 (1 MiB).
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	// +kubebuilder:default=1048576
	MaxRecordBytes int32 `json:"maxRecordBytes,omitempty"`

	// Compression of the produced record batches: zstd, lz4 or none.
	// Default zstd.
	// +kubebuilder:validation:Enum=zstd;lz4;none
	// +optional
	// +kubebuilder:default="zstd"
	Compression string `json:"compression,omitempty"`
}

// KafkaTopics names the two topics.
//
// +kubebuilder:validation:XValidation:rule="(has(self.state) ? self.state : 'KAFKA_SCHD') != (has(self.notice) ? self.notice : 'KAFKA_MSG')",message="must differ from topics.state",fieldPath=".notice"
type KafkaTopics struct {
	// State receives each flight's full state, key = FLID. Default KAFKA_SCHD.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,249}$`
	// +optional
	// +kubebuilder:default="KAFKA_SCHD"
	State string `json:"state,omitempty"`
	// Notice receives change notices. Default KAFKA_MSG.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]{1,249}$`
	// +optional
	// +kubebuilder:default="KAFKA_MSG"
	Notice string `json:"notice,omitempty"`
}

// KafkaTLS configures TLS to the brokers.
type KafkaTLS struct {
	// SecretRef names a Secret with optional keys ca.crt (trusted CA),
	// tls.crt and tls.key (client certificate). Absent: system roots.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`
	// ServerName overrides the name checked in the broker certificate: a
	// DNS name or an IP address.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.:-]+$`
	ServerName string `json:"serverName,omitempty"`
}

// TLSMode says whether the mailbox or the database is reached over TLS.
// +kubebuilder:validation:Enum=verify;unverified;disable
type TLSMode string

const (
	// TLSVerify (the default): TLS, the server's certificate verified
	// against secretRef's ca.crt (absent: the system roots).
	TLSVerify TLSMode = "verify"
	// TLSUnverified opts the feed in to TLS that does not verify the
	// server's certificate, to any address; the DSN decides (sslmode
	// require, prefer or allow; tls=skip-verify or tls=preferred, the
	// latter without its plain-text fallback). Without it such a DSN is
	// refused (the database's on loopback excepted), since whoever answers
	// at the address with any certificate reads the password exchange and
	// the data. Plain text beyond loopback stays refused. The feed shows
	// the UnverifiedTLSDependency condition while it is used.
	TLSUnverified TLSMode = "unverified"
	// TLSDisable opts the feed in to plain text to this server, to any
	// address; the DSN decides (tls=, sslmode=). Without it a DSN that
	// would send anything in plain text to an address other than loopback
	// (127.0.0.0/8, ::1, localhost) is refused. The feed shows the
	// PlaintextDependency condition while it is set. It takes in
	// unverified TLS too (UnverifiedTLSDependency shows when the DSN uses
	// it): a feed that accepts plain text cannot be safer for refusing
	// TLS.
	TLSDisable TLSMode = "disable"
)

// ServerTLS configures verified TLS to the mailbox or database server, or
// the explicit opt-in to TLS without verification (mode: unverified) or to
// plain text (mode: disable).
type ServerTLS struct {
	// Mode is verify (default), unverified or disable. unverified and
	// disable take neither secretRef nor serverName.
	// +optional
	Mode TLSMode `json:"mode,omitempty"`
	// SecretRef names a Secret with optional keys ca.crt (trusted CA, PEM;
	// absent: system roots), tls.crt and tls.key (client certificate, both
	// or neither).
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`
	// ServerName overrides the name checked in the server certificate
	// (default: the DSN's host): a DNS name or an IP address.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.:-]+$`
	ServerName string `json:"serverName,omitempty"`
}

// KafkaSASL configures SASL authentication.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Any of them is
	// refused without kafka.tls: credentials go only over verified TLS.
	// +kubebuilder:validation:Enum=PLAIN;SCRAM-SHA-256;SCRAM-SHA-512
	Mechanism string `json:"mechanism"`
	// SecretRef names a Secret with keys username and password.
	SecretRef SecretRef `json:"secretRef"`
}

// RequestsSpec controls the full-day schedule requests (RQFD). The pump
// requests each operation day of the horizon, one after the other, before it
// processes the first mailbox row and again every Interval. ReferenceData
// adds the reference-data requests (RQRD).
type RequestsSpec struct {
	// Horizon is the range of operation days requested, relative to today
	// (airport-local). Default from -1 to 1.
	// +optional
	// +kubebuilder:default={"from":-1,"to":1}
	Horizon *HorizonSpec `json:"horizon,omitempty"`

	// Interval between request rounds. Default 1h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1s'))",message="must be at least 1s"
	// +optional
	// +kubebuilder:default="1h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout after which an unanswered request is resent. Default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1s'))",message="must be at least 1s"
	// +optional
	// +kubebuilder:default="5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// RoutingID written to COUTMSGS.ROUTINGID. Default AODB. Letters,
	// digits and _.:@#+=- (as Sender and Receiver).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	// +kubebuilder:default="AODB"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@#+=-]+$`
	RoutingID string `json:"routingId,omitempty"`

	// Sender is the META SNDR of outbound requests. Default RMS.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +optional
	// +kubebuilder:default="RMS"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@#+=-]+$`
	Sender string `json:"sender,omitempty"`

	// Receiver is the META RCVR of outbound requests. Default AODB.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +optional
	// +kubebuilder:default="AODB"
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@#+=-]+$`
	Receiver string `json:"receiver,omitempty"`

	// Disabled stops the pump from sending requests (the AODB's window
	// pushes still upsert, but no day is ever diff-deleted), the
	// reference-data requests too. Default false.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// ReferenceData asks the AODB for whole reference-data lists (RQRD):
	// when the pump starts leading and then every ReferenceData.Interval,
	// one request per type listed whose list was neither asked for nor
	// replaced (a DNLD or RESP) within that interval. The answers (RESP)
	// replace the lists. Off by default (no types).
	// +optional
	// +kubebuilder:default={}
	ReferenceData ReferenceDataRequestsSpec `json:"referenceData,omitempty"`
}

// ReferenceDataRequestsSpec says which reference-data lists the pump asks
// the AODB for (RQRD), how often, and where the requests go.
type ReferenceDataRequestsSpec struct {
	// Types are the reference-data types requested, each by its SIS TYPE
	// (GLST) or its list name (gates), case-insensitive, or all for every
	// one of the interface's 23 types. Default none: no request.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z-]+$`
	Types []string `json:"types,omitempty"`

	// Interval within which a list asked for or replaced is not asked for
	// again (a restarted pump included). Default 24h, at least 1m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1m'))",message="must be at least 1m"
	// +optional
	// +kubebuilder:default="24h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// RoutingID written to COUTMSGS.ROUTINGID for these requests, where
	// the AODB routes reference-data requests apart from full-day ones.
	// Default requests.routingId. Letters, digits and _.:@#+=-.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@#+=-]+$`
	RoutingID string `json:"routingId,omitempty"`
}

// HorizonSpec is a range of days relative to today, both ends included.
type HorizonSpec struct {
	// From is the first day requested, in days relative to today (-1 = yesterday).
	// +kubebuilder:validation:Minimum=-30
	// +kubebuilder:validation:Maximum=30
	From int32 `json:"from"`
	// To is the last day requested, in days relative to today; not before From.
	// +kubebuilder:validation:Minimum=-30
	// +kubebuilder:validation:Maximum=30
	To int32 `json:"to"`
}

// RetentionSpec bounds what the lifecycle jobs keep (processing rules R8.3).
type RetentionSpec struct {
	// LedgerDays keeps the ledger of days newer than today-LedgerDays.
	// Default 7; 0 disables ledger cleanup.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3650
	// +optional
	// +kubebuilder:default=7
	LedgerDays *int32 `json:"ledgerDays,omitempty"`

	// TraceLogDays keeps schd_snap_log rows this long, by (OPERATION_DAY,
	// RECV_AT): a row goes once its operation day and its receipt are both
	// older (a row without a day: its receipt). Default 90.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	// +optional
	// +kubebuilder:default=90
	TraceLogDays int32 `json:"traceLogDays,omitempty"`

	// ArchiveDays keeps the raw text of mailbox rows, and each flight's
	// history (what every message changed), this long. Default 90.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	// +optional
	// +kubebuilder:default=90
	ArchiveDays int32 `json:"archiveDays,omitempty"`

	// NullDayDays moves flights that no full-day snapshot ever included
	// (operation day NULL: created by a FLOP or ADFT for an unknown FLID,
	// also after an FDEL or a history sweep) to history after this many
	// days without an update. Default 7 (processing rules R8.3); 0 keeps them.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3650
	// +optional
	// +kubebuilder:default=7
	NullDayDays *int32 `json:"nullDayDays,omitempty"`

	// DeliveredEventDays keeps delivered or superseded outbox rows. Default 2.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3650
	// +optional
	// +kubebuilder:default=2
	DeliveredEventDays int32 `json:"deliveredEventDays,omitempty"`

	// FlightFeedDays is how many FlightFeedDay objects the operator keeps
	// per feed: the newest N days of the ledger; older ones are deleted
	// (the ledger itself is bounded by ledgerDays). Default 14.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=366
	// +optional
	// +kubebuilder:default=14
	FlightFeedDays int32 `json:"flightFeedDays,omitempty"`
}

// HistorySpec sets when a flight counts as finished (processing rules R8.1). Every
// rule is anchored on the flight's operation day (or, before a full-day
// snapshot set one, the airport-local day of its SODT): a flight becomes
// history only when that day is over and the named SIS time, if later, is
// older than the rule's age. A flight cancelled days ahead for tomorrow
// stays until tomorrow is over. The first rule that holds wins.
type HistorySpec struct {
	// Disabled keeps every flight in current state. Default false.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// ScheduledAge after the end of the flight's day (or its SODT, if
	// later). Default 48h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="48h"
	ScheduledAge *metav1.Duration `json:"scheduledAge,omitempty"`

	// CancelledAge after the end of the day, or CNCL if later. Default 48h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="48h"
	CancelledAge *metav1.Duration `json:"cancelledAge,omitempty"`

	// DepartedAge after the end of the day, or NAAT (departure doors
	// closed) if later. Default 48h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="48h"
	DepartedAge *metav1.Duration `json:"departedAge,omitempty"`

	// ArrivedAge after the end of the day, or NEAT (arrival disembarkation
	// done) if later. Default 48h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="48h"
	ArrivedAge *metav1.Duration `json:"arrivedAge,omitempty"`

	// SweepInterval between history sweeps. Default 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1s'))",message="must be at least 1s"
	// +optional
	// +kubebuilder:default="10m"
	SweepInterval *metav1.Duration `json:"sweepInterval,omitempty"`

	// PlausibleWindow: a CNCL, NAAT or NEAT farther than this from the end
	// of the flight's day (a typo such as 01JAN000000) is kept as sent but
	// drives no history rule, and the message that set it is flagged
	// IMPLAUSIBLE_TIME. Default 8760h (one year).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) >= duration('1h'))",message="must be at least 1h"
	// +optional
	// +kubebuilder:default="8760h"
	PlausibleWindow *metav1.Duration `json:"plausibleWindow,omitempty"`
}

// PumpSpec tunes the failure matrix (processing rules R9).
//
// +kubebuilder:validation:XValidation:rule="duration(has(self.backoffMax) ? self.backoffMax : '1m') >= duration(has(self.backoffInitial) ? self.backoffInitial : '500ms')",message="must not be shorter than pump.backoffInitial (default 500ms; backoffMax defaults to 1m)",fieldPath=".backoffMax"
type PumpSpec struct {
	// UnsupportedRetryLimit is how often an unsupported message is retried
	// (FAILED(UNSUPPORTED)) before it becomes DEAD. Default 3.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	// +kubebuilder:default=3
	UnsupportedRetryLimit *int32 `json:"unsupportedRetryLimit,omitempty"`

	// InfraRetryLimit is how often an infrastructure failure is retried
	// before the message becomes DEAD. Default 0: retried until it succeeds,
	// so nothing is lost while a database is down.
	// +kubebuilder:validation:Minimum=0
	// +optional
	InfraRetryLimit int32 `json:"infraRetryLimit,omitempty"`

	// BackoffInitial is the first retry delay after an infrastructure
	// failure; it doubles (with jitter) up to BackoffMax. Default 500ms.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="500ms"
	BackoffInitial *metav1.Duration `json:"backoffInitial,omitempty"`

	// BackoffMax caps the retry delay. Default 1m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') || (duration(self) > duration('0s'))",message="must be a positive duration"
	// +optional
	// +kubebuilder:default="1m"
	BackoffMax *metav1.Duration `json:"backoffMax,omitempty"`

	// Replicas is the number of pump pods (Deployment <name>-pump): one
	// leads the feed on its Lease, the others stand by to take over.
	// Default 2; 1 runs without a standby (and without a
	// PodDisruptionBudget).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Resources of the pump container. Default: the operator's
	// (chart value pump.resources). Bounded by the chart
	// (pump.resourceBounds): a value outside is clamped, and said in
	// status.pumpPods.adjusted; without a memory limit the operator's is
	// kept; only cpu, memory and ephemeral-storage are taken.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector of the pump pods. Default: the operator's. Used only where the chart
	// allows it (pump.allowPlacementFromSpec); otherwise ignored, and said
	// in status.pumpPods.adjusted.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pump pods. Default: the operator's. Used only where the chart
	// allows it (pump.allowPlacementFromSpec); otherwise ignored, and said
	// in status.pumpPods.adjusted.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the pump pods. Default: the operator's. Used only where the chart
	// allows it (pump.allowPlacementFromSpec); otherwise ignored, and said
	// in status.pumpPods.adjusted.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints of the pump pods. Default: the
	// operator's, which spreads a feed's pods over nodes
	// (kubernetes.io/hostname, ScheduleAnyway).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// DefaultPumpReplicas is spec.pump.replicas when unset.
const DefaultPumpReplicas = 2

// MaxStatusDays bounds status.operationDays: the newest days of the ledger
// are listed there, every day of the ledger has its FlightFeedDay.
const MaxStatusDays = 31

// FlightFeedStatus is written by the pump pod holding the feed's Lease,
// except pumpPods, which the operator writes.
type FlightFeedStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, PumpRunning, MailboxReachable, DatabaseReachable,
	// KafkaReachable, Degraded. Each carries the generation it describes.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Pump describes the pump of the replica holding the Lease.
	// +optional
	Pump *PumpStatus `json:"pump,omitempty"`

	// Outbox describes Kafka events not yet delivered.
	// +optional
	Outbox *OutboxStatus `json:"outbox,omitempty"`

	// Backfill describes committed results not yet written to the mailbox.
	// +optional
	Backfill *BackfillStatus `json:"backfill,omitempty"`

	// LatestSnapshot is the operation day whose full-day snapshot committed
	// most recently.
	// +optional
	LatestSnapshot *LatestSnapshot `json:"latestSnapshot,omitempty"`

	// SchemaVersion is the database schema version (newest applied
	// migration) the leader found when it last started the pump: the
	// version in use, or, with the reason SchemaTooNew or SchemaTooOld,
	// the one it refused.
	// +optional
	SchemaVersion int64 `json:"schemaVersion,omitempty"`

	// OperationDays mirrors the newest days of the snapshot ledger, ascending
	// (at most 31; every ledger day also has a FlightFeedDay).
	// +listType=map
	// +listMapKey=day
	// +kubebuilder:validation:MaxItems=31
	// +optional
	OperationDays []OperationDayStatus `json:"operationDays,omitempty"`

	// ReadAPI says how the read API reaches the feed's database.
	// +optional
	ReadAPI *ReadAPIStatus `json:"readApi,omitempty"`

	// KafkaCredentials records the brokers the kafka.sasl Secret was last
	// given to, so a change of kafka.brokers that keeps the Secret is
	// noticed even across pump pods (KafkaBrokersChanged).
	// +optional
	KafkaCredentials *KafkaCredentialsStatus `json:"kafkaCredentials,omitempty"`

	// PumpPods describes the feed's pump pods (Deployment <name>-pump).
	// The operator writes it, and only it; every other field of the
	// status is the leading pump pod's.
	// +optional
	PumpPods *PumpPodsStatus `json:"pumpPods,omitempty"`
}

// KafkaCredentialsStatus is where the SASL credentials go.
type KafkaCredentialsStatus struct {
	// SecretName is kafka.sasl.secretRef.name.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`
	// Brokers are the kafka.brokers the credentials are given to.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9.-]+:[0-9]{1,5}$`
	// +kubebuilder:validation:items:MaxLength=259
	// +optional
	Brokers []string `json:"brokers,omitempty"`
	// PreviousBrokers are the brokers they were given to before
	// ChangedGeneration changed kafka.brokers and kept the Secret.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9.-]+:[0-9]{1,5}$`
	// +kubebuilder:validation:items:MaxLength=259
	// +optional
	PreviousBrokers []string `json:"previousBrokers,omitempty"`
	// ChangedGeneration is the generation of that change (0: none seen).
	// +optional
	ChangedGeneration int64 `json:"changedGeneration,omitempty"`
}

// PumpPodsStatus is the operator's view of a feed's pump Deployment.
type PumpPodsStatus struct {
	// Deployment is the name of the pump Deployment.
	Deployment string `json:"deployment"`
	// Replicas is the desired number of pump pods.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas counts pump pods that are Ready (leader and standbys).
	ReadyReplicas int32 `json:"readyReplicas"`
	// Ready is ReadyReplicas/Replicas, as kubectl shows it ("2/2").
	Ready string `json:"ready"`
	// UpdatedReplicas counts pods that run the newest pod template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// Generation is the FlightFeed generation every pump pod runs, once
	// the rollout of that generation has completed (0 while none has).
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// ObservedGeneration is the FlightFeed generation the operator last
	// rendered into the Deployment.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Waiting says why the operator has not created or updated the
	// Deployment yet (for instance while a pump of the previous release,
	// inside the operator, still holds the feed's Lease).
	// +optional
	Waiting string `json:"waiting,omitempty"`
	// Adjusted lists what of spec.pump the operator did not render as
	// written: a resource outside the chart's bounds (clamped), one a
	// FlightFeed may not set (ignored).
	// +optional
	// +listType=atomic
	Adjusted []string `json:"adjusted,omitempty"`
}

// ReadAPIDatabaseAccess is how the read API reaches a feed's database.
// +kubebuilder:validation:Enum=ReadOnlyRole;ReadOnlySessions
type ReadAPIDatabaseAccess string

const (
	// ReadAPIReadOnlyRole reads as the role of spec.database.readDsnSecretRef.
	ReadAPIReadOnlyRole ReadAPIDatabaseAccess = "ReadOnlyRole"
	// ReadAPIReadOnlySessions reads as the writer's role (spec.database.dsnSecretRef),
	// every session opened with default_transaction_read_only = on. That
	// stops writes by mistake, not a session that turns it off: give the
	// read API a read-only role for that.
	ReadAPIReadOnlySessions ReadAPIDatabaseAccess = "ReadOnlySessions"
)

// ReadAPIStatus describes the read API's database access.
type ReadAPIStatus struct {
	// DatabaseAccess: ReadOnlyRole or ReadOnlySessions.
	DatabaseAccess ReadAPIDatabaseAccess `json:"databaseAccess"`
}

// PumpStatus is a report of the pump. Holder, Epoch and Since are set
// while a replica leads; the figures only while its pump runs.
type PumpStatus struct {
	// Holder is the identity (pod name) holding the Lease and running the
	// pump; empty while no replica leads.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Holder string `json:"holder,omitempty"`

	// Epoch is the fencing epoch the holder took in pipeline_lock.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`

	// Since is when the holder started leading.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// LastProcessedID is the newest mailbox row id with a terminal state.
	// +optional
	LastProcessedID int64 `json:"lastProcessedId,omitempty"`

	// HeadID is the mailbox row at the FIFO head (absent when it is empty).
	// +optional
	HeadID int64 `json:"headId,omitempty"`

	// HeadBlockedSince is set while the head keeps failing (retries of an
	// infrastructure failure or an unsupported message).
	// +optional
	HeadBlockedSince *metav1.Time `json:"headBlockedSince,omitempty"`

	// HeadLastError is the last failure of a blocked head.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	HeadLastError string `json:"headLastError,omitempty"`

	// QueueDepth counts unprocessed VALID mailbox rows.
	// +optional
	QueueDepth int64 `json:"queueDepth,omitempty"`

	// Lag is the age of the oldest unprocessed mailbox row, in whole
	// seconds; absent while no pump runs.
	// +optional
	Lag *metav1.Duration `json:"lag,omitempty"`

	// Counts are messages by terminal result since the pump started.
	// +optional
	Counts *ResultCounts `json:"counts,omitempty"`

	// MessagesPerSecond over the last minute, one decimal.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9])?$`
	// +optional
	MessagesPerSecond string `json:"messagesPerSecond,omitempty"`
	// FailedRequests are the days of the request horizon whose full-day
	// request FAILED (its answers refused the same way twice) and that no
	// operator re-requested: the pump does not ask for them again until
	// `flightfeed rerequest --day D`. Oldest day first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=31
	// +optional
	FailedRequests []FailedRequestStatus `json:"failedRequests,omitempty"`
}

// FailedRequestStatus is a day held by its FAILED full-day request.
type FailedRequestStatus struct {
	// Day is the operation day (YYYY-MM-DD).
	Day string `json:"day"`
	// Rejection is the refusal its answers met (reason code: detail).
	// +kubebuilder:validation:MaxLength=1024
	Rejection string `json:"rejection"`
	// MessageID is the last refused answer's mailbox id.
	// +optional
	MessageID int64 `json:"messageId,omitempty"`
	// FailedAt is when the request was given up.
	// +optional
	FailedAt *metav1.Time `json:"failedAt,omitempty"`
}

// ResultCounts counts messages by terminal result.
type ResultCounts struct {
	// Succeeded counts messages applied (SUCCEEDED).
	Succeeded int64 `json:"succeeded"`
	// Skipped counts re-sent copies recognised inside mailbox.dedupWindow (SKIPPED).
	Skipped int64 `json:"skipped"`
	// Dead counts messages refused for good (DEAD).
	Dead int64 `json:"dead"`
	// Failed counts failed attempts that are retried (FAILED).
	Failed int64 `json:"failed"`
}

// OutboxStatus describes the Kafka outbox.
type OutboxStatus struct {
	// Pending counts events not yet acknowledged by the brokers.
	Pending int64 `json:"pending"`
	// OldestAge is the age of the oldest pending event, in whole seconds.
	OldestAge metav1.Duration `json:"oldestAge"`
	// Parked counts events the brokers refused for good (PARKED): they
	// are no longer retried; `flightfeed parked` lists and re-delivers them.
	// +optional
	Parked int64 `json:"parked,omitempty"`
}

// BackfillStatus describes results waiting to be written to the mailbox.
type BackfillStatus struct {
	// Pending counts committed results not yet written back.
	Pending int64 `json:"pending"`
}

// LatestSnapshot names the most recently committed full-day snapshot.
type LatestSnapshot struct {
	// Day is the operation day, YYYY-MM-DD (airport-local).
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	Day string `json:"day"`
	// Version is the day's snapshot generation.
	Version int64 `json:"version"`
	// CommittedAt is when it committed.
	// +optional
	CommittedAt *metav1.Time `json:"committedAt,omitempty"`
}

// OperationDayStatus is one day of the snapshot ledger.
type OperationDayStatus struct {
	// Day is the operation day, YYYY-MM-DD (airport-local).
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	Day string `json:"day"`
	// Version is the day's snapshot generation.
	Version int64 `json:"version"`
	// LastMessageID is the mailbox row id of the day's last full-day snapshot.
	LastMessageID int64 `json:"lastMessageId"`
	// LastCommitAt is when that snapshot committed.
	// +optional
	LastCommitAt *metav1.Time `json:"lastCommitAt,omitempty"`
	// Flights is the size of the day's roster.
	Flights int64 `json:"flights"`
	// Held is set on a day past its ledger retention (spec.retention.ledgerDays)
	// that is kept: why, as "REASON: detail" (processing rules R8.3, per day):
	// FLIGHTS_CURRENT (a flight of the day is still in current state),
	// MESSAGE_UNFINISHED (a PENDING or FAILED snapshot message concerns it)
	// or BACKFILL_PENDING (one waits for its write-back to the mailbox).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Held string `json:"held,omitempty"`
}

// FlightFeed is one AODB feed: a mailbox pumped into a flight-state database
// and published to Kafka.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ff;ffeed,categories=aodb
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.pump.holder`
// +kubebuilder:printcolumn:name="Lag",type=string,JSONPath=`.status.pump.lag`
// +kubebuilder:printcolumn:name="Latest-Day",type=string,JSONPath=`.status.latestSnapshot.day`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.latestSnapshot.version`
// +kubebuilder:printcolumn:name="Pods",type=string,JSONPath=`.status.pumpPods.ready`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type FlightFeed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlightFeedSpec   `json:"spec"`
	Status FlightFeedStatus `json:"status,omitempty"`
}

// FlightFeedList is a list of FlightFeeds.
//
// +kubebuilder:object:root=true
type FlightFeedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlightFeed `json:"items"`
}
