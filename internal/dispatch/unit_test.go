package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/store"
)

func TestBackoffDoublesWithJitterUpToTheLimit(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, c := range []struct {
		attempt  int
		jitter   float64
		min, max time.Duration
	}{
		{1, 0, 250 * ms, 250 * ms},
		{1, 0.999, 250 * ms, 500 * ms},
		{2, 0, 500 * ms, 500 * ms},
		{3, 0.5, 1500 * ms, 1500 * ms},
		{7, 0, 16 * time.Second, 16 * time.Second},
		{8, 0.999, 30 * time.Second, 60 * time.Second},
		{1000, 0, 30 * time.Second, 30 * time.Second},
	} {
		got := backoff(c.attempt, 500*ms, time.Minute, c.jitter)
		if got < c.min || got > c.max {
			t.Errorf("backoff(%d, jitter %.3f) = %s, want %s..%s", c.attempt, c.jitter, got, c.min, c.max)
		}
	}
}

func TestRecordOfEachEventKind(t *testing.T) {
	t.Parallel()
	topics := Topics{State: "S", Notice: "N"}
	for _, c := range []struct {
		ev      store.OutboxEvent
		topic   string
		headers map[string]string
	}{
		{store.OutboxEvent{Kind: store.KindState, Event: store.EventUpsert, FLID: 121112312, StateVersion: 42, OperationDay: "2026-09-09", Payload: []byte(`{"FLID":"121112312"}`)},
			"S", map[string]string{"state-version": "42", "event": "UPSERT", "operation-day": "2026-09-09"}},
		{store.OutboxEvent{Kind: store.KindState, Event: store.EventDelete, FLID: 7, StateVersion: 43, Payload: []byte(`{"DELETED":true,"FLID":"7","STATE_VERSION":43}`)},
			"S", map[string]string{"state-version": "43", "event": "DELETE"}},
		{store.OutboxEvent{Kind: store.KindNotice, Event: store.EventNotice, FLID: 7, StateVersion: 44, OperationDay: "2026-09-10", Payload: []byte(`{}`)},
			"N", map[string]string{"state-version": "44", "event": "NOTICE", "operation-day": "2026-09-10"}},
	} {
		r, err := Record(c.ev, topics)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, h := range r.Headers {
			got[h.Key] = string(h.Value)
		}
		if r.Topic != c.topic || string(r.Key) != c.ev.FLID.String() || string(r.Value) != string(c.ev.Payload) || fmt.Sprint(got) != fmt.Sprint(c.headers) {
			t.Errorf("%s %s: topic %s key %s headers %v", c.ev.Kind, c.ev.Event, r.Topic, r.Key, got)
		}
	}
	if _, err := Record(store.OutboxEvent{Kind: "OTHER"}, topics); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]Reason{
		fmt.Errorf("%w: conn reset", errDatabase):                                       ReasonDatabase,
		fmt.Errorf("deliver: %w", kerr.UnknownTopicOrPartition):                         ReasonTopicMissing,
		fmt.Errorf("deliver: %w", kerr.TopicAuthorizationFailed):                        ReasonNotAuthorized,
		fmt.Errorf("deliver: %w", kerr.ClusterAuthorizationFailed):                      ReasonNotAuthorized,
		fmt.Errorf("%w; last: %w", kgo.ErrRecordTimeout, kerr.SaslAuthenticationFailed): ReasonAuthenticationFailed,
		fmt.Errorf("deliver: %w", kgo.ErrRecordTimeout):                                 ReasonBrokerUnavailable,
		fmt.Errorf("%w: 3 records", errUnacknowledged):                                  ReasonBrokerUnavailable,
		fmt.Errorf("deliver: %w", kerr.MessageTooLarge):                                 ReasonProduceFailed,
		errors.New("something else"):                                                    ReasonProduceFailed,
	} {
		if got := classify(err); got != want {
			t.Errorf("classify(%v) = %s, want %s", err, got, want)
		}
	}
}
