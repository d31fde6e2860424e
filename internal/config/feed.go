package config

import (
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// Feed is one feed's resolved configuration: the spec with every default
// applied, the airport's time zone, and the credentials that the spec only
// references.
type Feed struct {
	// Namespace and Name identify the FlightFeed resource; both are empty
	// for a --config file.
	Namespace, Name string
	// Spec with defaults applied; read durations and limits from here.
	Spec v1alpha1.FlightFeedSpec
	// Location is the airport time zone (Spec.Airport.TimeZone).
	Location *time.Location
	// Secrets holds the resolved credentials.
	Secrets Secrets
}

// Secrets are the credentials of a feed. They never appear in the spec or in
// logs.
type Secrets struct {
	// MailboxDSN is the go-sql-driver/mysql DSN of the shared mailbox.
	MailboxDSN string
	// DatabaseDSN is the pgx connection string of the state database.
	DatabaseDSN string
	// ReadDatabaseDSN, optional, is a read-only role's connection string
	// for reads that need no writer (the read API).
	ReadDatabaseDSN string
	// Kafka holds TLS and SASL material, when the spec enables them.
	Kafka KafkaSecrets
	// MailboxTLS and DatabaseTLS are the PEM material of mailbox.tls and
	// database.tls, when the spec enables them.
	MailboxTLS, DatabaseTLS TLSMaterial
}

// TLSMaterial is a server connection's PEM blocks; each may be empty.
type TLSMaterial struct {
	// CA is the trusted CA (empty: the system roots); Cert and Key are the
	// client certificate and its key.
	CA, Cert, Key []byte
}

// KafkaSecrets are the broker credentials.
type KafkaSecrets struct {
	// CA, Cert and Key are PEM blocks; each may be empty.
	CA, Cert, Key []byte
	// Username and Password for SASL.
	Username, Password string
}

// Defaults of the optional spec fields; the API documentation of each field
// repeats its default.
const (
	DefaultTimeZone              = "Asia/Shanghai"
	DefaultPollInterval          = 100 * time.Millisecond
	DefaultIdlePollInterval      = time.Second
	DefaultBatchSize             = 1000
	DefaultMaxMessageBytes       = 40 << 20
	DefaultMaxBatchBytes         = 16 << 20
	DefaultDedupWindow           = 24 * time.Hour
	DefaultRecsDropPercent       = 20
	DefaultDatabaseMaxConns      = 4
	DefaultStateTopic            = "KAFKA_SCHD"
	DefaultNoticeTopic           = "KAFKA_MSG"
	DefaultClientID              = "flightfeed"
	DefaultTransactionalIDPrefix = "flightfeed"
	// DefaultMaxRecordBytes is Kafka's own max.message.bytes default, 1 MiB.
	DefaultMaxRecordBytes  = 1 << 20
	DefaultCompression     = "zstd"
	DefaultHorizonFrom     = -1
	DefaultHorizonTo       = 1
	DefaultRequestInterval = time.Hour
	DefaultRequestTimeout  = 5 * time.Minute
	DefaultRoutingID       = "AODB"
	DefaultRequestSender   = "RMS"
	DefaultRequestReceiver = "AODB"
	// DefaultReferenceDataInterval: reference lists change seldom, and
	// their ADD, UPD and DEL messages keep them current in between.
	DefaultReferenceDataInterval = 24 * time.Hour
	DefaultLedgerDays            = 7
	DefaultNullDayDays           = 7
	DefaultTraceLogDays          = 90
	DefaultArchiveDays           = 90
	DefaultDeliveredEventDays    = 2
	DefaultFlightFeedDays        = 14
	DefaultHistoryAge            = 48 * time.Hour
	DefaultSweepInterval         = 10 * time.Minute
	DefaultPlausibleWindow       = 365 * 24 * time.Hour
	DefaultUnsupportedRetries    = 3
	DefaultBackoffInitial        = 500 * time.Millisecond
	DefaultBackoffMax            = time.Minute
)
