package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// SetDefaults fills every unset optional field of spec with its default.
// Fields the user set are left alone, so defaulting twice changes nothing.
func SetDefaults(spec *v1alpha1.FlightFeedSpec) {
	str(&spec.Airport.TimeZone, DefaultTimeZone)

	mb := &spec.Mailbox
	in := &mb.Inbound
	str(&in.Table, "CMINMSGS")
	str(&in.IDColumn, "CMINMSGS_ID")
	str(&in.DateReceivedColumn, "CMINMSGS_DATE_RECEIVED")
	str(&in.DateProcessedColumn, "CMINMSGS_DATE_PROCESSED")
	str(&in.StatusColumn, "CMINMSGS_STATUS")
	str(&in.BodyColumn, "CMINMSGS_CLOB_MSG")
	str(&in.ResultColumn, "CMINMSGS_PROC_RESULT")
	str(&in.NoteColumn, "CMINMSGS_PROC_NOTE")
	str(&in.ValidStatus, "VALID")
	out := &mb.Outbound
	str(&out.Table, "COUTMSGS")
	str(&out.IDColumn, "COUTMSGS_ID")
	str(&out.DateInsertedColumn, "COUTMSGS_DATE_INSERTED")
	str(&out.DateSentColumn, "COUTMSGS_DATE_SENT")
	str(&out.RoutingIDColumn, "ROUTINGID")
	str(&out.BodyColumn, "COUTMSGS_CLOB_MSG")
	dur(&mb.PollInterval, DefaultPollInterval)
	// mailbox.idlePollInterval stays unset: its default depends on
	// pollInterval, which a CRD default cannot name (IdlePollInterval).
	num(&mb.BatchSize, DefaultBatchSize)
	num(&mb.MaxMessageBytes, DefaultMaxMessageBytes)
	num(&mb.MaxBatchBytes, DefaultMaxBatchBytes)
	dur(&mb.DedupWindow, DefaultDedupWindow)
	num(&mb.RecsDropPercent, DefaultRecsDropPercent)

	num(&spec.Database.MaxConns, DefaultDatabaseMaxConns)
	if spec.Database.AutoMigrate == nil {
		on := true
		spec.Database.AutoMigrate = &on
	}

	k := &spec.Kafka
	str(&k.Topics.State, DefaultStateTopic)
	str(&k.Topics.Notice, DefaultNoticeTopic)
	str(&k.ClientID, DefaultClientID)
	if k.Transactions == nil {
		on := true
		k.Transactions = &on
	}
	str(&k.TransactionalIDPrefix, DefaultTransactionalIDPrefix)
	num(&k.MaxRecordBytes, DefaultMaxRecordBytes)
	str(&k.Compression, DefaultCompression)

	r := &spec.Requests
	if r.Horizon == nil {
		r.Horizon = &v1alpha1.HorizonSpec{From: DefaultHorizonFrom, To: DefaultHorizonTo}
	}
	dur(&r.Interval, DefaultRequestInterval)
	dur(&r.Timeout, DefaultRequestTimeout)
	str(&r.RoutingID, DefaultRoutingID)
	str(&r.Sender, DefaultRequestSender)
	str(&r.Receiver, DefaultRequestReceiver)
	dur(&r.ReferenceData.Interval, DefaultReferenceDataInterval)
	// ReferenceData.RoutingID stays empty when unset: its default is
	// another field (requests.routingId), which a CRD default cannot say,
	// so it is resolved where it is used (ReferenceRoutingID) and the
	// stored spec shows what the user wrote.

	ret := &spec.Retention
	if ret.LedgerDays == nil {
		days := int32(DefaultLedgerDays)
		ret.LedgerDays = &days
	}
	num(&ret.TraceLogDays, DefaultTraceLogDays)
	num(&ret.ArchiveDays, DefaultArchiveDays)
	num(&ret.DeliveredEventDays, DefaultDeliveredEventDays)
	num(&ret.FlightFeedDays, DefaultFlightFeedDays)
	if ret.NullDayDays == nil {
		days := int32(DefaultNullDayDays)
		ret.NullDayDays = &days
	}

	h := &spec.History
	dur(&h.ScheduledAge, DefaultHistoryAge)
	dur(&h.CancelledAge, DefaultHistoryAge)
	dur(&h.DepartedAge, DefaultHistoryAge)
	dur(&h.ArrivedAge, DefaultHistoryAge)
	dur(&h.SweepInterval, DefaultSweepInterval)
	dur(&h.PlausibleWindow, DefaultPlausibleWindow)

	p := &spec.Pump
	if p.UnsupportedRetryLimit == nil {
		limit := int32(DefaultUnsupportedRetries)
		p.UnsupportedRetryLimit = &limit
	}
	dur(&p.BackoffInitial, DefaultBackoffInitial)
	dur(&p.BackoffMax, DefaultBackoffMax)
}

func str(field *string, def string) {
	if *field == "" {
		*field = def
	}
}

func num[T int32 | int64](field *T, def T) {
	if *field == 0 {
		*field = def
	}
}

func dur(field **metav1.Duration, def time.Duration) {
	if *field == nil {
		*field = &metav1.Duration{Duration: def}
	}
}

// ReferenceRoutingID is the routing id of reference-data requests:
// requests.referenceData.routingId, else requests.routingId.
func ReferenceRoutingID(r v1alpha1.RequestsSpec) string {
	if r.ReferenceData.RoutingID != "" {
		return r.ReferenceData.RoutingID
	}
	return r.RoutingID
}

// IdlePollInterval is the pump's wait between head reads once the head
// has stayed empty for a while: mailbox.idlePollInterval, else
// DefaultIdlePollInterval or pollInterval, whichever is longer (an idle
// mailbox is never read more often than a busy one).
func IdlePollInterval(mb v1alpha1.MailboxSpec) time.Duration {
	var poll time.Duration
	if mb.PollInterval != nil {
		poll = mb.PollInterval.Duration
	}
	if mb.IdlePollInterval != nil {
		return max(mb.IdlePollInterval.Duration, poll)
	}
	return max(DefaultIdlePollInterval, poll)
}
