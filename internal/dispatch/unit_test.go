package dispatch

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/store"
)

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
		fmt.Errorf("deliver: %w", kerr.MessageTooLarge):                                 ReasonRecordTooLarge,
		fmt.Errorf("deliver: %w", kerr.InvalidRecord):                                   ReasonRecordInvalid,
		errors.New("something else"):                                                    ReasonProduceFailed,
	} {
		if got := classify(err); got != want {
			t.Errorf("classify(%v) = %s, want %s", err, got, want)
		}
	}
}

// The backoff comes from Options, else from the feed as package config
// defaulted it; the dispatcher has no defaults of its own to fall back on.
func TestBackoffFromOptionsOrTheDefaultedFeed(t *testing.T) {
	t.Parallel()
	feed := &config.Feed{}
	if _, err := withDefaults(Options{}, feed); err == nil {
		t.Fatal("a feed config did not default was accepted")
	}
	config.SetDefaults(&feed.Spec)
	for _, c := range []struct {
		name              string
		opts              Options
		initial, maxDelay time.Duration
	}{
		{"the feed's", Options{}, config.DefaultBackoffInitial, config.DefaultBackoffMax},
		{"the options'", Options{BackoffInitial: time.Second, BackoffMax: time.Hour}, time.Second, time.Hour},
		{"max raised to initial", Options{BackoffInitial: 2 * time.Minute}, 2 * time.Minute, 2 * time.Minute},
	} {
		o, err := withDefaults(c.opts, feed)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.BackoffInitial != c.initial || o.BackoffMax != c.maxDelay {
			t.Errorf("%s: backoff %s..%s, want %s..%s", c.name, o.BackoffInitial, o.BackoffMax, c.initial, c.maxDelay)
		}
	}
}

// Only answers about the record itself park it; answers about the broker,
// the topic or the producer are retried.
func TestPermanentForRecord(t *testing.T) {
	for err, want := range map[error]bool{
		fmt.Errorf("x: %w (uncompressed_bytes=9)", kerr.MessageTooLarge): true,
		kerr.RecordListTooLarge:       true,
		kerr.InvalidRecord:            true,
		kerr.CorruptMessage:           true,
		kerr.InvalidTimestamp:         true,
		kgo.ErrRecordTimeout:          false,
		kerr.TopicAuthorizationFailed: false,
		kerr.UnknownTopicOrPartition:  false,
		kerr.NotLeaderForPartition:    false,
		kerr.ProducerFenced:           false,
		errHeldBack:                   false,
		errAborted:                    false,
	} {
		if got := permanentForRecord(err); got != want {
			t.Errorf("permanentForRecord(%v) = %v, want %v", err, got, want)
		}
	}
}
