package pumpdata

import (
	"time"
)

// History reasons (flight_history.reason).
const (
	HistoryScheduled = "SODT_AGE"
	HistoryCancelled = "CNCL_AGE"
	HistoryDeparted  = "NAAT_AGE"
	HistoryArrived   = "NEAT_AGE"
	HistoryNullDay   = "NULL_DAY_RETENTION"
)

// HistoryCutoffs decide when a flight counts as finished (processing rules R8.1:
// "the window is computed on the operation day SODT belongs to, in the
// airport's local time zone"). Every rule is anchored on the end of the
// flight's operation day, or, while it has none, of the airport-local day
// of its SODT: a rule holds when the later of that day end and its SIS time
// is before its cutoff (now minus the rule's age). A flight without either
// anchor is never history by these rules (NULL-day retention covers it). A
// zero cutoff disables its rule.
type HistoryCutoffs struct {
	Scheduled, Cancelled, Departed, Arrived time.Time
	// Zone is the airport time zone (an IANA name PostgreSQL knows).
	Zone string
	// Plausible: a CNCL, NAAT or NEAT farther than this from the day end
	// drives no rule (0: no check).
	Plausible time.Duration
}
