package config

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/sis"
)

// The length limits are checked apart from the patterns: a counted
// repetition such as {1,249} compiles to that many copies of its class, and
// these patterns alone made this package's start cost 0.8 MB and 11,000
// allocations in every process of the binary (GODEBUG=inittrace=1).
var (
	iataPattern       = regexp.MustCompile(`^[A-Z]{3}$`)
	identifierPattern = bounded(`^[A-Za-z_][A-Za-z0-9_$]*$`, 64)
	topicPattern      = bounded(`^[A-Za-z0-9._-]+$`, 249)
	txnPrefixPattern  = bounded(`^[A-Za-z0-9._-]+$`, 100)
	// The free-text-looking settings are codes, never prose: a value with a
	// space, a quote, markup or a control character is a mistake or an
	// attack (it reaches SQL parameters, the RQFD's XML, the Kafka client id
	// and the TLS server name check), and is refused here and by the CRD.
	timeZonePattern   = bounded(`^[A-Za-z0-9_+/-]+$`, 64)
	codePattern       = regexp.MustCompile(`^[A-Za-z0-9_.:@#+=-]+$`)
	clientIDPattern   = bounded(`^[A-Za-z0-9._-]+$`, 128)
	serverNamePattern = bounded(`^[A-Za-z0-9.:-]+$`, 253)
)

// boundedPattern matches a value of at most max bytes that matches re.
type boundedPattern struct {
	re  *regexp.Regexp
	max int
}

func bounded(expr string, maxLen int) boundedPattern {
	return boundedPattern{re: regexp.MustCompile(expr), max: maxLen}
}

// MatchString reports whether s is short enough and matches.
func (b boundedPattern) MatchString(s string) bool { return len(s) <= b.max && b.re.MatchString(s) }

// Messages of the refusals above, shared by their fields.
const (
	codeMessage       = "may hold only letters, digits and _.:@#+=-"
	serverNameMessage = "must be a DNS name or an IP address (letters, digits and .:-, at most 253 characters)"
)

// ValidateSpec checks a defaulted spec and returns every problem, each
// naming its field under root (field.NewPath("spec") for the resource, nil
// for a config file). It also loads the time zone, so an unknown zone is
// reported here and not when the first message arrives.
func ValidateSpec(spec *v1alpha1.FlightFeedSpec, root *field.Path) (*time.Location, field.ErrorList) {
	var errs field.ErrorList
	child := func(name string) *field.Path {
		if root == nil {
			return field.NewPath(name)
		}
		return root.Child(name)
	}

	ap := child("airport")
	if !iataPattern.MatchString(spec.Airport.IATA) {
		errs = append(errs, field.Invalid(ap.Child("iata"), spec.Airport.IATA, "must be a three-letter upper-case IATA code"))
	}
	loc, err := time.LoadLocation(spec.Airport.TimeZone)
	if err != nil || spec.Airport.TimeZone == "Local" || !timeZonePattern.MatchString(spec.Airport.TimeZone) {
		errs = append(errs, field.Invalid(ap.Child("timeZone"), spec.Airport.TimeZone, "must be an IANA time zone such as Asia/Shanghai"))
		loc = nil
	}

	errs = append(errs, validateMailbox(&spec.Mailbox, child("mailbox"))...)

	db := child("database")
	errs = append(errs, between(db.Child("maxConns"), int64(spec.Database.MaxConns), 2, 64)...)
	errs = append(errs, validateServerTLS(spec.Database.TLS, db.Child("tls"))...)

	errs = append(errs, validateKafka(&spec.Kafka, child("kafka"))...)
	errs = append(errs, validateRequests(&spec.Requests, child("requests"))...)
	errs = append(errs, validateRetention(&spec.Retention, child("retention"))...)

	hp := child("history")
	h := &spec.History
	errs = append(errs, positive(hp.Child("scheduledAge"), h.ScheduledAge)...)
	errs = append(errs, positive(hp.Child("cancelledAge"), h.CancelledAge)...)
	errs = append(errs, positive(hp.Child("departedAge"), h.DepartedAge)...)
	errs = append(errs, positive(hp.Child("arrivedAge"), h.ArrivedAge)...)
	errs = append(errs, atLeast(hp.Child("sweepInterval"), h.SweepInterval, time.Second)...)
	errs = append(errs, atLeast(hp.Child("plausibleWindow"), h.PlausibleWindow, time.Hour)...)

	pp := child("pump")
	p := &spec.Pump
	if p.UnsupportedRetryLimit != nil {
		errs = append(errs, between(pp.Child("unsupportedRetryLimit"), int64(*p.UnsupportedRetryLimit), 0, 1000)...)
	}
	errs = append(errs, between(pp.Child("infraRetryLimit"), int64(p.InfraRetryLimit), 0, 1<<31-1)...)
	errs = append(errs, positive(pp.Child("backoffInitial"), p.BackoffInitial)...)
	errs = append(errs, positive(pp.Child("backoffMax"), p.BackoffMax)...)
	if p.BackoffInitial != nil && p.BackoffMax != nil && p.BackoffMax.Duration < p.BackoffInitial.Duration {
		errs = append(errs, field.Invalid(pp.Child("backoffMax"), p.BackoffMax.Duration.String(), "must not be shorter than pump.backoffInitial"))
	}
	return loc, errs
}

func validateMailbox(mb *v1alpha1.MailboxSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ip := path.Child("inbound")
	in := &mb.Inbound
	for _, c := range []struct{ name, value string }{
		{"table", in.Table}, {"idColumn", in.IDColumn}, {"dateReceivedColumn", in.DateReceivedColumn},
		{"dateProcessedColumn", in.DateProcessedColumn}, {"statusColumn", in.StatusColumn},
		{"bodyColumn", in.BodyColumn}, {"resultColumn", in.ResultColumn}, {"noteColumn", in.NoteColumn},
	} {
		errs = append(errs, identifier(ip.Child(c.name), c.value)...)
	}
	if in.ValidStatus == "" || len(in.ValidStatus) > 32 {
		errs = append(errs, field.Invalid(ip.Child("validStatus"), in.ValidStatus, "must be 1 to 32 characters"))
	} else {
		errs = append(errs, code(ip.Child("validStatus"), in.ValidStatus)...)
	}
	op := path.Child("outbound")
	out := &mb.Outbound
	for _, c := range []struct{ name, value string }{
		{"table", out.Table}, {"idColumn", out.IDColumn}, {"dateInsertedColumn", out.DateInsertedColumn},
		{"dateSentColumn", out.DateSentColumn}, {"routingIdColumn", out.RoutingIDColumn}, {"bodyColumn", out.BodyColumn},
	} {
		errs = append(errs, identifier(op.Child(c.name), c.value)...)
	}
	errs = append(errs, validateServerTLS(mb.TLS, path.Child("tls"))...)
	errs = append(errs, atLeast(path.Child("pollInterval"), mb.PollInterval, time.Millisecond)...)
	if mb.PollInterval != nil && mb.PollInterval.Duration > time.Minute {
		errs = append(errs, field.Invalid(path.Child("pollInterval"), mb.PollInterval.Duration.String(), "must be at most 1m"))
	}
	errs = append(errs, atLeast(path.Child("idlePollInterval"), mb.IdlePollInterval, time.Millisecond)...)
	if mb.IdlePollInterval != nil && mb.IdlePollInterval.Duration > time.Minute {
		errs = append(errs, field.Invalid(path.Child("idlePollInterval"), mb.IdlePollInterval.Duration.String(), "must be at most 1m"))
	}
	if mb.IdlePollInterval != nil && mb.PollInterval != nil && mb.IdlePollInterval.Duration < mb.PollInterval.Duration {
		errs = append(errs, field.Invalid(path.Child("idlePollInterval"), mb.IdlePollInterval.Duration.String(), "must not be shorter than mailbox.pollInterval"))
	}
	errs = append(errs, between(path.Child("batchSize"), int64(mb.BatchSize), 1, 10000)...)
	errs = append(errs, between(path.Child("maxMessageBytes"), mb.MaxMessageBytes, 1024, 1<<30)...)
	errs = append(errs, between(path.Child("maxBatchBytes"), mb.MaxBatchBytes, 64<<10, 1<<30)...)
	errs = append(errs, positive(path.Child("dedupWindow"), mb.DedupWindow)...)
	errs = append(errs, between(path.Child("recsDropPercent"), int64(mb.RecsDropPercent), 1, 100)...)
	return errs
}

// validateServerTLS checks mailbox.tls or database.tls: a known mode, a
// valid serverName, and no TLS material with mode disable or unverified
// (it would be ignored, which the author cannot have meant).
func validateServerTLS(t *v1alpha1.ServerTLS, path *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	switch t.Mode {
	case "", v1alpha1.TLSVerify:
		errs = append(errs, serverName(path.Child("serverName"), t.ServerName)...)
	case v1alpha1.TLSDisable:
		if t.SecretRef != nil || t.ServerName != "" {
			errs = append(errs, field.Invalid(path.Child("mode"), string(t.Mode),
				"disable (plain text) takes neither secretRef nor serverName: remove them, or drop mode to verify TLS"))
		}
	case v1alpha1.TLSUnverified:
		if t.SecretRef != nil || t.ServerName != "" {
			errs = append(errs, field.Invalid(path.Child("mode"), string(t.Mode),
				"unverified (no certificate check, as the DSN says) takes neither secretRef nor serverName: remove them, or drop mode to verify TLS"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("mode"), string(t.Mode),
			[]string{string(v1alpha1.TLSVerify), string(v1alpha1.TLSUnverified), string(v1alpha1.TLSDisable)}))
	}
	return errs
}

// Bounds of kafka.maxRecordBytes, and the values of kafka.compression.
const (
	MinRecordBytes  = 4096
	MaxRecordBytes  = 1 << 30
	CompressionZstd = "zstd"
	CompressionLZ4  = "lz4"
	CompressionNone = "none"
)

func validateKafka(k *v1alpha1.KafkaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	bp := path.Child("brokers")
	if len(k.Brokers) == 0 {
		errs = append(errs, field.Required(bp, "at least one seed broker host:port"))
	}
	for i, b := range k.Brokers {
		// The entry is shown redacted: "user:password@host:port" is a
		// mistake people make, and the message must not repeat it.
		shown := RedactDSN(b)
		if strings.Contains(b, "@") {
			errs = append(errs, field.Invalid(bp.Index(i), shown, "must be host:port without credentials (give them in kafka.sasl)"))
			continue
		}
		host, port, err := net.SplitHostPort(b)
		if err != nil || host == "" {
			errs = append(errs, field.Invalid(bp.Index(i), shown, "must be host:port"))
			continue
		}
		if net.ParseIP(host) == nil && !serverNamePattern.MatchString(host) {
			errs = append(errs, field.Invalid(bp.Index(i), shown, "host must be a DNS name or an IP address"))
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			errs = append(errs, field.Invalid(bp.Index(i), shown, "port must be 1 to 65535"))
			continue
		}
		if why := BrokerAddressRefusal(host); why != "" {
			errs = append(errs, field.Invalid(bp.Index(i), shown, "broker "+host+" "+why))
		}
	}
	tp := path.Child("topics")
	if !topicPattern.MatchString(k.Topics.State) {
		errs = append(errs, field.Invalid(tp.Child("state"), k.Topics.State, "must be a Kafka topic name ([A-Za-z0-9._-], 1 to 249 characters)"))
	}
	if !topicPattern.MatchString(k.Topics.Notice) {
		errs = append(errs, field.Invalid(tp.Child("notice"), k.Topics.Notice, "must be a Kafka topic name ([A-Za-z0-9._-], 1 to 249 characters)"))
	}
	if k.Topics.State == k.Topics.Notice {
		errs = append(errs, field.Invalid(tp.Child("notice"), k.Topics.Notice, "must differ from topics.state"))
	}
	if k.MaxRecordBytes < MinRecordBytes || k.MaxRecordBytes > MaxRecordBytes {
		errs = append(errs, field.Invalid(path.Child("maxRecordBytes"), k.MaxRecordBytes,
			fmt.Sprintf("must be %d to %d bytes", MinRecordBytes, MaxRecordBytes)))
	}
	switch k.Compression {
	case CompressionZstd, CompressionLZ4, CompressionNone:
	default:
		errs = append(errs, field.NotSupported(path.Child("compression"), k.Compression,
			[]string{CompressionZstd, CompressionLZ4, CompressionNone}))
	}
	if len(k.ClientID) > 128 {
		errs = append(errs, field.TooLong(path.Child("clientId"), k.ClientID, 128))
	} else if !clientIDPattern.MatchString(k.ClientID) {
		errs = append(errs, field.Invalid(path.Child("clientId"), k.ClientID, "may hold only letters, digits and ._-"))
	}
	if k.TLS != nil {
		errs = append(errs, serverName(path.Child("tls", "serverName"), k.TLS.ServerName)...)
	}
	if !txnPrefixPattern.MatchString(k.TransactionalIDPrefix) {
		errs = append(errs, field.Invalid(path.Child("transactionalIdPrefix"), k.TransactionalIDPrefix,
			"must be [A-Za-z0-9._-], 1 to 100 characters"))
	}
	if k.SASL != nil {
		switch k.SASL.Mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			errs = append(errs, field.NotSupported(path.Child("sasl", "mechanism"), k.SASL.Mechanism,
				[]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}))
		}
		// Credentials go only over verified TLS: PLAIN sends the password
		// itself, and a SCRAM exchange an eavesdropper or a host the spec
		// points at can crack offline. kafka.tls always verifies (system
		// roots or its CA); there is no way to switch that off.
		if k.TLS == nil {
			why := "SASL credentials go only over verified TLS: it needs kafka.tls (the brokers' certificates checked against the system roots or kafka.tls's CA)"
			if k.SASL.Mechanism == "PLAIN" {
				why = "PLAIN sends the password in clear text: " + why
			}
			errs = append(errs, field.Invalid(path.Child("sasl", "mechanism"), k.SASL.Mechanism, why))
		}
	}
	return errs
}

func validateRequests(r *v1alpha1.RequestsSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h := r.Horizon; h != nil {
		hp := path.Child("horizon")
		errs = append(errs, between(hp.Child("from"), int64(h.From), -30, 30)...)
		errs = append(errs, between(hp.Child("to"), int64(h.To), -30, 30)...)
		if h.From > h.To {
			errs = append(errs, field.Invalid(hp.Child("from"), h.From, "must not be after requests.horizon.to"))
		}
	}
	errs = append(errs, atLeast(path.Child("interval"), r.Interval, time.Second)...)
	errs = append(errs, atLeast(path.Child("timeout"), r.Timeout, time.Second)...)
	for _, c := range []struct {
		name, value string
		maxLen      int
	}{{"routingId", r.RoutingID, 64}, {"sender", r.Sender, 32}, {"receiver", r.Receiver, 32}} {
		if e := length(path.Child(c.name), c.value, c.maxLen); e != nil {
			errs = append(errs, e...)
			continue
		}
		errs = append(errs, code(path.Child(c.name), c.value)...)
	}
	return append(errs, validateReferenceData(&r.ReferenceData, path.Child("referenceData"))...)
}

// AllReferenceTypes is the entry of requests.referenceData.types that
// stands for every reference-data type.
const AllReferenceTypes = "all"

// maxReferenceTypes bounds requests.referenceData.types (as the schema
// does): the interface has 23 types, each with two names, and all.
const maxReferenceTypes = 64

func validateReferenceData(rd *v1alpha1.ReferenceDataRequestsSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, atLeast(path.Child("interval"), rd.Interval, time.Minute)...)
	if rd.RoutingID == "" {
		// requests.routingId's (ReferenceRoutingID).
	} else if e := length(path.Child("routingId"), rd.RoutingID, 64); e != nil {
		errs = append(errs, e...)
	} else {
		errs = append(errs, code(path.Child("routingId"), rd.RoutingID)...)
	}
	tp := path.Child("types")
	if len(rd.Types) > maxReferenceTypes {
		return append(errs, field.TooMany(tp, len(rd.Types), maxReferenceTypes))
	}
	for i, t := range rd.Types {
		if strings.EqualFold(t, AllReferenceTypes) {
			continue
		}
		if _, ok := sis.LookupReferenceKind(t); !ok {
			errs = append(errs, field.Invalid(tp.Index(i), t, referenceTypesMessage()))
		}
	}
	return errs
}

// referenceTypesMessage names every valid entry of
// requests.referenceData.types, on one line.
func referenceTypesMessage() string {
	kinds := sis.ReferenceKinds()
	slices.SortFunc(kinds, func(a, b sis.ReferenceKind) int { return strings.Compare(a.Type, b.Type) })
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Type + " (" + k.Name + ")"
	}
	return "must be " + AllReferenceTypes + " or a reference-data type, by its SIS TYPE or list name (case-insensitive): " +
		strings.Join(names, ", ")
}

// ReferenceRequestTypes resolves a validated requests.referenceData.types
// into SIS TYPEs, sorted, each once: all is every type; an entry that names
// no type (refused by ValidateSpec) is left out. None: no request.
func ReferenceRequestTypes(rd v1alpha1.ReferenceDataRequestsSpec) []string {
	var out []string
	for _, t := range rd.Types {
		if strings.EqualFold(t, AllReferenceTypes) {
			out = out[:0]
			for _, k := range sis.ReferenceKinds() {
				out = append(out, k.Type)
			}
			break
		}
		if k, ok := sis.LookupReferenceKind(t); ok {
			out = append(out, k.Type)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func validateRetention(r *v1alpha1.RetentionSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.LedgerDays != nil {
		errs = append(errs, between(path.Child("ledgerDays"), int64(*r.LedgerDays), 0, 3650)...)
	}
	errs = append(errs, between(path.Child("traceLogDays"), int64(r.TraceLogDays), 1, 3650)...)
	errs = append(errs, between(path.Child("archiveDays"), int64(r.ArchiveDays), 1, 3650)...)
	errs = append(errs, between(path.Child("deliveredEventDays"), int64(r.DeliveredEventDays), 1, 3650)...)
	errs = append(errs, between(path.Child("flightFeedDays"), int64(r.FlightFeedDays), 1, 366)...)
	if r.NullDayDays != nil {
		errs = append(errs, between(path.Child("nullDayDays"), int64(*r.NullDayDays), 0, 3650)...)
	}
	return errs
}

func identifier(path *field.Path, v string) field.ErrorList {
	if identifierPattern.MatchString(v) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, "must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_$]*, at most 64 characters)")}
}

// code refuses a mailbox or SIS code with a character outside codePattern.
func code(path *field.Path, v string) field.ErrorList {
	if codePattern.MatchString(v) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, codeMessage)}
}

// serverName refuses a TLS server name that is neither empty (the DSN's
// host is checked) nor a DNS name or IP address.
func serverName(path *field.Path, v string) field.ErrorList {
	if v == "" || serverNamePattern.MatchString(v) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, serverNameMessage)}
}

func between(path *field.Path, v, lo, hi int64) field.ErrorList {
	if v >= lo && v <= hi {
		return nil
	}
	return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("must be between %d and %d", lo, hi))}
}

func positive(path *field.Path, d *metav1.Duration) field.ErrorList {
	if d == nil || d.Duration > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(path, d.Duration.String(), "must be a positive duration")}
}

func atLeast(path *field.Path, d *metav1.Duration, lo time.Duration) field.ErrorList {
	if d == nil || d.Duration >= lo {
		return nil
	}
	return field.ErrorList{field.Invalid(path, d.Duration.String(), "must be at least "+lo.String())}
}

func length(path *field.Path, v string, maxLen int) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	if len(v) > maxLen {
		return field.ErrorList{field.TooLong(path, v, maxLen)}
	}
	return nil
}
