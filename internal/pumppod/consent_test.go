package pumppod_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/simulate"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// fakeBroker is a TCP listener the test owns in place of a broker of the
// attacker's: it counts the connections made to it and the bytes sent
// over them (a TLS ClientHello first, the SASL exchange after it), and
// answers nothing.
type fakeBroker struct {
	ln    net.Listener
	mu    sync.Mutex
	conns int
	bytes int
}

func newFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBroker{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns++
			b.mu.Unlock()
			go func() {
				defer func() { _ = c.Close() }()
				buf := make([]byte, 4096)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				for {
					n, err := c.Read(buf)
					b.mu.Lock()
					b.bytes += n
					b.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return b
}

func (b *fakeBroker) addr() string { return b.ln.Addr().String() }

func (b *fakeBroker) seen() (conns, bytes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns, b.bytes
}

// TestAnotherFeedsSASLSecretIsRefused: a person who may
// create FlightFeeds but not read Secrets makes feed pvg name feed pek's
// labelled SASL Secret and a broker of their own (a public-CA certificate
// would do: kafka.tls: {} uses the system roots). The Secret's owner named
// pek alone in flightfeed.aero/feeds, so pvg is refused with a condition
// and an Event naming the Secret and the feed, and the broker gets no
// connection at all. Were the owner to let every feed use it ("*"), the
// brokers it lists still keep its credentials from the attacker's host:
// refused again, naming the hosts, still no connection. Only when the
// owner lists that host too does the pump dial it — which shows the
// listener would have seen the pump of the old code, which used any
// labelled Secret.
func TestAnotherFeedsSASLSecretIsRefused(t *testing.T) {
	const marker = "Zq9SaslMarker"
	h := newHarness(t)
	h.startReplicaWith("replica-a", pumppod.StartFeed)
	evil := newFakeBroker(t)

	// pek's credentials, for pek and pek's brokers only.
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pek-kafka", Namespace: h.ns,
		Labels:      map[string]string{v1alpha1.SecretLabel: "true"},
		Annotations: map[string]string{v1alpha1.FeedsAnnotation: "pek", v1alpha1.BrokersAnnotation: "kafka-1.example:9093,kafka-2.example:9093"}},
		Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "pek", "password": marker}})
	// pvg: its own mailbox and database, pek's SASL Secret, the
	// attacker's broker.
	h.secrets("pvg")
	h.brokers = []string{evil.addr()}
	key := h.feed("pvg", "horizon: {from: 0, to: 1}", "horizon: {from: 0, to: 0}",
		"topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}",
		"topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}, tls: {}, sasl: {mechanism: SCRAM-SHA-512, secretRef: {name: pek-kafka}}}")

	refused := func(reason v1alpha1.ConditionReason, eventReason string, parts ...string) {
		t.Helper()
		await.Eventually(t, fmt.Sprintf("Ready and PumpRunning False (%s) naming %q", reason, parts), waitLong, func() (bool, string) {
			ff, err := h.getFeed(key)
			if err != nil {
				return false, err.Error()
			}
			var got []string
			ok := ff.Status.ObservedGeneration == ff.Generation
			for _, ct := range []v1alpha1.ConditionType{v1alpha1.ConditionReady, v1alpha1.ConditionPumpRunning} {
				c := meta.FindStatusCondition(ff.Status.Conditions, string(ct))
				if c == nil {
					return false, string(ct) + " missing"
				}
				got = append(got, fmt.Sprintf("%s %s %s: %s", ct, c.Status, c.Reason, c.Message))
				ok = ok && c.Status == metav1.ConditionFalse && c.Reason == string(reason) && c.ObservedGeneration == ff.Generation
				for _, p := range parts {
					ok = ok && strings.Contains(c.Message, p)
				}
			}
			conns, bytes := evil.seen()
			return ok, fmt.Sprintf("%s | the attacker's broker: %d connections, %d bytes", strings.Join(got, " | "), conns, bytes)
		})
		e := h.waitEvent(key, eventReason, parts[0])
		for _, p := range parts {
			if !strings.Contains(e.Note, p) {
				t.Fatalf("the %s Event %q does not say %q", eventReason, e.Note, p)
			}
		}
		if strings.Contains(e.Note, marker) {
			t.Fatalf("the Event shows the password: %s", e.Note)
		}
	}
	noConnection := func(when string) {
		t.Helper()
		// Several resyncs: the refusal is not a passing state.
		time.Sleep(4 * testSecretResync)
		if conns, bytes := evil.seen(); conns != 0 || bytes != 0 {
			t.Fatalf("%s: the attacker's broker got %d connections and %d bytes", when, conns, bytes)
		}
	}
	annotate := func(k, v string) {
		t.Helper()
		var s corev1.Secret
		if err := h.c.Get(h.ctx(), types.NamespacedName{Namespace: h.ns, Name: "pek-kafka"}, &s); err != nil {
			t.Fatal(err)
		}
		orig := s.DeepCopy()
		s.Annotations[k] = v
		if err := h.c.Patch(h.ctx(), &s, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}

	refused(v1alpha1.ReasonSecretNotForFeed, pumppod.ReasonSecretNotForFeed,
		"spec.kafka.sasl.secretRef.name: secret "+h.ns+"/pek-kafka is for the feeds pek (annotation flightfeed.aero/feeds), not for feed pvg: "+
			"feed pvg does not start and sends nothing; if the Secret's owner means pvg to use it: "+
			"kubectl annotate secret -n "+h.ns+" pek-kafka --overwrite flightfeed.aero/feeds=pek,pvg")
	noConnection("the Secret names pek only")

	annotate(v1alpha1.FeedsAnnotation, "*")
	refused(v1alpha1.ReasonBrokersNotAllowed, pumppod.ReasonBrokersNotAllowed,
		"spec.kafka.brokers: secret "+h.ns+"/pek-kafka (kafka.sasl.secretRef of feed pvg) allows its credentials to go to "+
			"kafka-1.example:9093,kafka-2.example:9093 only (annotation flightfeed.aero/brokers), not to "+evil.addr()+": nothing is sent; "+
			"if its owner means them to go there: kubectl annotate secret -n "+h.ns+" pek-kafka --overwrite "+
			"flightfeed.aero/brokers=kafka-1.example:9093,kafka-2.example:9093,"+evil.addr())
	noConnection("every feed may use the Secret, its brokers do not include the attacker's")

	// The control: allowed, the pump dials that host (a snapshot gives
	// the dispatcher something to send).
	annotate(v1alpha1.BrokersAnnotation, "kafka-1.example:9093,"+evil.addr())
	mbox, loc, day := h.pumpRequest()
	resp := simulate.Response(simulate.Options{Day: day, Flights: 1, Seed: 1, FirstSeqn: 1, Location: loc})
	mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Now(), Body: resp.Body})
	await.Eventually(t, "the pump to dial the broker its Secret now allows", waitLong, func() (bool, string) {
		conns, bytes := evil.seen()
		return conns > 0 && bytes > 0, fmt.Sprintf("%d connections, %d bytes", conns, bytes)
	})
}
