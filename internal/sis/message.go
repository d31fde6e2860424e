package sis

import (
	"time"

	"github.com/flightfeed/flightfeed/internal/flight"
)

// Kind is what the pump does with a decoded message.
type Kind uint8

// Message kinds.
const (
	KindUnknown Kind = iota
	// KindSnapshot is SCHD DNLD or RESP: every record is a full snapshot of
	// its flight (absent field = Clear). Meta.Styp tells which.
	KindSnapshot
	// KindADFT is SCHD ADFT: records are increments (absent = Unchanged).
	KindADFT
	// KindFLOP is a flight-level event: records are increments.
	KindFLOP
	// KindFDEL is FLOP FDEL: Deletions lists the FLIDs to delete.
	KindFDEL
	// KindReference is reference data (airlines, gates, …): Reference
	// holds the operation and the records.
	KindReference
	// KindNotApplied is a type of the interface FlightFeed does not apply
	// (the seasonal schedule, a request): NotApplied says why; its body is
	// not decoded.
	KindNotApplied
)

var kindNames = [...]string{"UNKNOWN", "SNAPSHOT", "ADFT", "FLOP", "FDEL", "REFERENCE", "NOT_APPLIED"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "UNKNOWN"
}

// MarshalText renders the name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Meta is the decoded META envelope. Values are trimmed of surrounding white
// space; the originals of SEQN and the time are kept beside the parsed forms.
type Meta struct {
	Sndr string `json:"sndr"`
	Rcvr string `json:"rcvr,omitempty"`
	// Seqn is the original SEQN text, SeqnNum its value.
	Seqn    string `json:"seqn"`
	SeqnNum int    `json:"seqn_num"`
	// TimeTag is "DDTM" or "DTTM", whichever the message used; Time is the
	// original text and ParsedTime its instant.
	TimeTag    string    `json:"time_tag"`
	Time       string    `json:"time"`
	ParsedTime time.Time `json:"parsed_time"`
	Type       string    `json:"type"`
	Styp       string    `json:"styp"`
	Sorc       string    `json:"sorc,omitempty"`
	Mgid       string    `json:"mgid,omitempty"`
	Rmid       string    `json:"rmid,omitempty"`
	Apot       string    `json:"apot,omitempty"`
}

// IdentityKey is the upstream identity SNDR|TYPE|STYP|SEQN (processing rules R10.4).
func (m Meta) IdentityKey() string {
	return m.Sndr + "|" + m.Type + "|" + m.Styp + "|" + m.Seqn
}

// Record is one decoded FLTR or FLOP record.
type Record struct {
	// Index is the 1-based position among the message's records.
	Index int `json:"index"`
	// OperationDay is the "YYYY-MM-DD" day of SODT in the airport zone, or
	// "" when the record carries no SODT (possible for ADFT and FLOP only).
	// FLOP never changes a flight's day; the pump decides what to use.
	OperationDay string `json:"operation_day,omitempty"`
	flight.Commands
}

// Message is one decoded mailbox message.
type Message struct {
	Meta Meta `json:"meta"`
	Kind Kind `json:"kind"`
	// Recs is the declared RECS of a SCHD message, or -1 when absent.
	Recs int `json:"recs"`
	// Records holds snapshot, ADFT and FLOP records in input order.
	Records []Record `json:"records,omitempty"`
	// Refused are the snapshot records the decoder refused and left out
	// (Options.SkipRefusedRecords), in input order; nil otherwise.
	Refused []RefusedRecord `json:"refused,omitempty"`
	// Reference holds a reference-data message's records (KindReference).
	Reference *Reference `json:"reference,omitempty"`
	// NotApplied says why a message of KindNotApplied is not applied.
	NotApplied *NotApplied `json:"not_applied,omitempty"`
	// Deletions holds the FLIDs of an FDEL, in input order.
	Deletions []flight.FLID `json:"deletions,omitempty"`
	// IgnoredTags counts elements and attributes the module does not map
	// ("TAG" or "TAG@ATTR"), for the ignored-tags metric. Nil when none.
	IgnoredTags map[string]int `json:"ignored_tags,omitempty"`
	// ContentDigest fingerprints the message without what a re-send may
	// change (ResendFields): two copies with the same identity and the same
	// ContentDigest are one message sent twice. Set on success only.
	ContentDigest []byte `json:"-"`
	// Positions is set when Records carry no commands
	// (Options.DeferRecordsFrom): where each record is in the input, for
	// LoadRecords. Nil otherwise.
	Positions *RecordPositions `json:"-"`
}

// RefusedRecord is a snapshot record the decoder refused and left out
// (Options.SkipRefusedRecords): its position (1-based, FLTR[Index]), its
// FLID and the refusal.
type RefusedRecord struct {
	Index int         `json:"index"`
	FLID  flight.FLID `json:"flid"`
	Err   *Error      `json:"-"`
}

// IsFullSnapshot reports whether records are full snapshots (DNLD/RESP).
func (m *Message) IsFullSnapshot() bool { return m.Kind == KindSnapshot }

func (m *Message) ignore(tag string) { m.addIgnored(tag, 1) }

func (m *Message) addIgnored(tag string, n int) {
	if m.IgnoredTags == nil {
		m.IgnoredTags = map[string]int{}
	}
	m.IgnoredTags[tag] += n
}
