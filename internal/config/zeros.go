package config

import (
	"encoding/json"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// zeroMeansUnset lists the spec's numbers whose zero value stands for "not
// set" (omitempty; SetDefaults fills them). A resource cannot say 0 for
// them (its schema's minimum refuses it), but a config file can, and
// without this list a written 0 would silently become the default. None of
// them accepts 0.
var zeroMeansUnset = []struct {
	section, field string
	restore        func(*v1alpha1.FlightFeedSpec)
}{
	{"mailbox", "batchSize", func(s *v1alpha1.FlightFeedSpec) { s.Mailbox.BatchSize = 0 }},
	{"mailbox", "maxMessageBytes", func(s *v1alpha1.FlightFeedSpec) { s.Mailbox.MaxMessageBytes = 0 }},
	{"mailbox", "maxBatchBytes", func(s *v1alpha1.FlightFeedSpec) { s.Mailbox.MaxBatchBytes = 0 }},
	{"mailbox", "recsDropPercent", func(s *v1alpha1.FlightFeedSpec) { s.Mailbox.RecsDropPercent = 0 }},
	{"database", "maxConns", func(s *v1alpha1.FlightFeedSpec) { s.Database.MaxConns = 0 }},
	{"retention", "traceLogDays", func(s *v1alpha1.FlightFeedSpec) { s.Retention.TraceLogDays = 0 }},
	{"retention", "archiveDays", func(s *v1alpha1.FlightFeedSpec) { s.Retention.ArchiveDays = 0 }},
	{"retention", "deliveredEventDays", func(s *v1alpha1.FlightFeedSpec) { s.Retention.DeliveredEventDays = 0 }},
	{"retention", "flightFeedDays", func(s *v1alpha1.FlightFeedSpec) { s.Retention.FlightFeedDays = 0 }},
}

// restoreWrittenZeros puts back, after defaulting, every number of
// zeroMeansUnset that the file wrote as 0, so validation refuses it with
// the field's own range ("mailbox.batchSize: Invalid value: 0: must be
// between 1 and 10000") instead of running with the default. js is the
// document already decoded strictly, so its sections are objects.
func restoreWrittenZeros(js []byte, spec *v1alpha1.FlightFeedSpec) {
	var doc map[string]map[string]json.RawMessage
	if json.Unmarshal(js, &doc) != nil {
		return
	}
	for _, z := range zeroMeansUnset {
		raw, ok := doc[z.section][z.field]
		if !ok {
			continue
		}
		var n float64
		if json.Unmarshal(raw, &n) == nil && n == 0 {
			z.restore(spec)
		}
	}
}
