package dispatch

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/store"
)

// Record headers (processing rules R7.3).
const (
	// HeaderStateVersion is the event's state_version in decimal.
	HeaderStateVersion = "state-version"
	// HeaderOperationDay is the flight's operation day, YYYY-MM-DD; the
	// header is absent while the day is NULL.
	HeaderOperationDay = "operation-day"
	// HeaderEvent is UPSERT or DELETE on the state topic, NOTICE on the
	// notice topic.
	HeaderEvent = "event"
)

// Topics names the two topics.
type Topics struct {
	State, Notice string
}

// Record is the Kafka record of an outbox event: the value is the payload
// exactly as committed, the key the FLID in decimal.
func Record(e store.OutboxEvent, topics Topics) (*kgo.Record, error) {
	var topic string
	switch e.Kind {
	case store.KindState:
		topic = topics.State
	case store.KindNotice:
		topic = topics.Notice
	default:
		return nil, fmt.Errorf("outbox event %d: unknown kind %q", e.ID, e.Kind)
	}
	headers := make([]kgo.RecordHeader, 0, 3)
	headers = append(headers,
		kgo.RecordHeader{Key: HeaderStateVersion, Value: []byte(strconv.FormatInt(e.StateVersion, 10))},
		kgo.RecordHeader{Key: HeaderEvent, Value: []byte(e.Event)})
	if e.OperationDay != "" {
		headers = append(headers, kgo.RecordHeader{Key: HeaderOperationDay, Value: []byte(e.OperationDay)})
	}
	return &kgo.Record{
		Topic:   topic,
		Key:     []byte(e.FLID.String()),
		Value:   e.Payload,
		Headers: headers,
	}, nil
}
