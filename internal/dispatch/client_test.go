package dispatch_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/dispatch/dispatchtest"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// pki is a throwaway CA (testpki) whose server certificate names only
// kafka.test, not 127.0.0.1: the handshake succeeds only when serverName
// is used.
type pki struct {
	*testpki.PKI
	t *testing.T
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	return &pki{PKI: testpki.New(t, "flightfeed test CA", "kafka.test"), t: t}
}

// serverTLS requires a client certificate signed by the CA (mutual TLS).
func (p *pki) serverTLS() *tls.Config { return p.ServerTLS(p.t) }

// dialTLS is a test client's mutual TLS to the brokers p's CA signed.
func (p *pki) dialTLS() kgo.Opt {
	return kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.Pool(), ServerName: "kafka.test",
		Certificates: []tls.Certificate{clientPair(p.t, p)}})
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n      ") }

// tlsYAML is the kafka.tls section of a config file.
func (p *pki) tlsYAML(withCA bool) string {
	y := "  tls:\n    serverName: kafka.test\n"
	if withCA {
		y += "    ca: |\n      " + indent(string(p.CAPEM)) + "\n"
	}
	return y + "    cert: |\n      " + indent(string(p.ClientCertPEM)) + "\n    key: |\n      " + indent(string(p.ClientKeyPEM)) + "\n"
}

// NewClient speaks mutual TLS (CA, client certificate, server name from
// the configuration) and each SASL mechanism to a broker that requires
// them; events are delivered through it.
func TestNewClientTLSAndSASL(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	c := cluster(t, kfake.TLS(p.serverTLS()), kfake.EnableSASL(),
		kfake.Superuser(dispatch.MechanismPlain, "plain-user", "plain-pass"),
		kfake.Superuser(dispatch.MechanismScramSHA256, "scram256-user", "scram256-pass"),
		kfake.Superuser(dispatch.MechanismScramSHA512, "scram512-user", "scram512-pass"),
		kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	for i, mech := range []struct{ name, user string }{
		{dispatch.MechanismPlain, "plain-user"},
		{dispatch.MechanismScramSHA256, "scram256-user"},
		{dispatch.MechanismScramSHA512, "scram512-user"},
	} {
		t.Run(mech.name, func(t *testing.T) {
			e := newEnv(t)
			pass := strings.TrimSuffix(mech.user, "-user") + "-pass"
			sasl := fmt.Sprintf("  sasl: {mechanism: %s, username: %s, password: %s}\n", mech.name, mech.user, pass)
			feed := e.feed(brokers, stateTopic, noticeTopic, p.tlsYAML(true)+sasl)
			d := e.dispatcher(feed, fastRetry, fastClient()...)
			e.flop(flight.FLID(100+i), "ESTT", "09SEP260900")
			if n := deliverAll(t, d); n != 2 {
				t.Fatalf("%d records delivered, want 2", n)
			}
		})
	}
	var total int
	for _, r := range dispatchtest.Records(t, brokers, stateTopic,
		kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.Pool(), ServerName: "kafka.test",
			Certificates: []tls.Certificate{clientPair(t, p)}}),
		kgo.SASL(scram.Auth{User: "scram256-user", Pass: "scram256-pass"}.AsSha256Mechanism())) {
		if r.Key >= "100" && r.Key <= "102" {
			total++
		}
	}
	if total != 3 {
		t.Fatalf("%d state records read back, want 3", total)
	}
}

func clientPair(t *testing.T, p *pki) tls.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(p.ClientCertPEM, p.ClientKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// A wrong password and an untrusted broker certificate are reported as
// authentication failures, and the events stay pending.
func TestAuthenticationFailuresAreReported(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	c := cluster(t, kfake.TLS(p.serverTLS()), kfake.EnableSASL(),
		kfake.Superuser(dispatch.MechanismScramSHA512, "user", "right"), kfake.SeedTopics(3, stateTopic, noticeTopic))
	// kfake drops the connection on bad credentials, where Kafka answers
	// SASL_AUTHENTICATION_FAILED (58): answer as Kafka does for the user
	// "refused".
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r, ok := req.(*kmsg.SASLAuthenticateRequest)
		if !ok || !strings.Contains(string(r.SASLAuthBytes), "n=refused,") {
			return nil, nil, false
		}
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = r.Version
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
		return resp, nil, true
	})
	brokers := c.ListenAddrs()
	for name, extra := range map[string]string{
		"bad credentials": p.tlsYAML(true) + "  sasl: {mechanism: SCRAM-SHA-512, username: refused, password: wrong}\n",
		"untrusted CA":    p.tlsYAML(false) + "  sasl: {mechanism: SCRAM-SHA-512, username: user, password: right}\n",
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, extra), fastRetry, fastClient()...)
			e.flop(1, "ESTT", "09SEP260900")
			if _, err := d.DeliverOnce(t.Context()); err == nil {
				t.Fatal("delivered")
			}
			st := d.Status()
			if !st.Failing || st.LastErrorReason != dispatch.ReasonAuthenticationFailed {
				t.Fatalf("status %+v", st)
			}
			if ok, _ := d.Idle(t.Context()); ok {
				t.Fatal("events dropped")
			}
		})
	}
}

// A producer without WRITE on the state topic is refused by the broker:
// reported as NotAuthorized and retried; notices (allowed) go through; once
// the ACL is granted, the state arrives.
func TestAuthorizationFailureIsRetriedUntilGranted(t *testing.T) {
	t.Parallel()
	allow := func(topic string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	// SASL goes only over verified TLS.
	p := newPKI(t)
	c := cluster(t, kfake.TLS(p.serverTLS()), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser(dispatch.MechanismScramSHA256, "admin", "admin"),
		kfake.User(dispatch.MechanismScramSHA256, "writer", "secret",
			allow(noticeTopic, kmsg.ACLOperationWrite), allow(noticeTopic, kmsg.ACLOperationDescribe),
			allow(stateTopic, kmsg.ACLOperationDescribe), allowTxnIDs("flightfeed.")),
		kfake.SeedTopics(3, stateTopic, noticeTopic))
	brokers := c.ListenAddrs()
	e := newEnv(t)
	d := e.dispatcher(e.feed(brokers, stateTopic, noticeTopic, p.tlsYAML(true)+"  sasl: {mechanism: SCRAM-SHA-256, username: writer, password: secret}\n"),
		fastRetry, fastClient()...)
	run(t, d)
	e.snapshot(rec(1, "CA1"))
	d.Notify()
	eventually(t, "refusal reported", func() bool {
		st := d.Status()
		return st.Failing && st.LastErrorReason == dispatch.ReasonNotAuthorized
	})
	if !strings.Contains(d.Status().LastError, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("error %q", d.Status().LastError)
	}
	eventually(t, "notices delivered", func() bool {
		return e.noticesOnTopic(t, brokers, p.dialTLS(), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()))
	})

	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...), p.dialTLS(), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, stateTopic, kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:writer", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, cr)
	resp, err := req.RequestWith(context.Background(), admin)
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("grant WRITE: %v %+v", err, resp)
	}
	idle(t, d)
	dispatchtest.AssertConverged(t, brokers, stateTopic, e.export(),
		p.dialTLS(), kgo.SASL(scram.Auth{User: "admin", Pass: "admin"}.AsSha256Mechanism()))
}

// allowTxnIDs grants WRITE on the transactional ids starting with prefix,
// what a transactional producer needs besides its topics.
func allowTxnIDs(prefix string) kfake.ACL {
	return kfake.ACL{Resource: kmsg.ACLResourceTypeTransactionalId, Name: prefix, Pattern: kmsg.ACLResourcePatternTypePrefixed,
		Operation: kmsg.ACLOperationWrite, Allow: true}
}

// A producer without WRITE on its transactional id can never initialise:
// the dispatcher stops for good with NotAuthorized (a new producer is
// needed once the ACL is granted: the feed's runner is restarted), Run
// returns ErrProducerFailed, and nothing is marked.
func TestTransactionalIDRefusedStopsTheDispatcher(t *testing.T) {
	t.Parallel()
	allow := func(topic string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	p := newPKI(t)
	c := cluster(t, kfake.TLS(p.serverTLS()), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser(dispatch.MechanismScramSHA256, "admin", "admin"),
		kfake.User(dispatch.MechanismScramSHA256, "writer", "secret",
			allow(noticeTopic, kmsg.ACLOperationWrite), allow(noticeTopic, kmsg.ACLOperationDescribe),
			allow(stateTopic, kmsg.ACLOperationWrite), allow(stateTopic, kmsg.ACLOperationDescribe)),
		kfake.SeedTopics(3, stateTopic, noticeTopic))
	e := newEnv(t)
	d := e.dispatcher(e.feed(c.ListenAddrs(), stateTopic, noticeTopic, p.tlsYAML(true)+"  sasl: {mechanism: SCRAM-SHA-256, username: writer, password: secret}\n"),
		fastRetry, fastClient()...)
	e.snapshot(rec(1, "CA1"))
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	err := d.Run(ctx)
	if !errors.Is(err, dispatch.ErrProducerFailed) || !strings.Contains(err.Error(), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED") {
		t.Fatalf("Run returned %v, want ErrProducerFailed for TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	if st := d.Status(); !st.Stopped || st.LastErrorReason != dispatch.ReasonNotAuthorized {
		t.Fatalf("status %+v, want stopped, NotAuthorized", st)
	}
	if n, err := d.DeliverOnce(t.Context()); n != 0 || !errors.Is(err, dispatch.ErrProducerFailed) {
		t.Fatalf("a stopped dispatcher delivered %d (%v)", n, err)
	}
	if n := e.count(`SELECT count(*) FROM msg_event_record WHERE NOT (` + pending + `) OR attempts > 0`); n != 0 {
		t.Fatalf("%d events marked by a dispatcher that never produced", n)
	}
}

// Configuration errors are named before any connection is made.
func TestNewClientRejectsBadTLSAndSASL(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	for name, k := range map[string]func(*config.Feed){
		"CA without PEM":   func(f *config.Feed) { f.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{}; f.Secrets.Kafka.CA = []byte("junk") },
		"cert without key": func(f *config.Feed) { f.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{}; f.Secrets.Kafka.Cert = p.ClientCertPEM },
		"mismatched pair": func(f *config.Feed) {
			f.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{}
			f.Secrets.Kafka.Cert, f.Secrets.Kafka.Key = p.ClientCertPEM, p.ClientCertPEM
		},
		"unknown mechanism": func(f *config.Feed) { f.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: "GSSAPI"} },
		"no brokers":        func(f *config.Feed) { f.Spec.Kafka.Brokers = nil },
		"not defaulted":     func(f *config.Feed) { f.Spec.Kafka.ClientID = "" },
	} {
		f := bareFeed()
		k(f)
		if cl, err := dispatch.NewClient(f); err == nil {
			cl.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	// Topic auto-creation follows the spec; it is off by default.
	f := bareFeed()
	for _, allow := range []bool{false, true} {
		f.Spec.Kafka.AllowAutoTopicCreation = allow
		cl, err := dispatch.NewClient(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := cl.OptValue(kgo.AllowAutoTopicCreation).(bool); got != allow {
			t.Errorf("allowAutoTopicCreation %v: client says %v", allow, got)
		}
		if id, _ := cl.OptValue(kgo.ClientID).(string); id != config.DefaultClientID {
			t.Errorf("client id %q", id)
		}
		cl.Close()
	}
}

// With zstd (the default codec) the producer's compressor writes exactly
// franz-go's default compressor's bytes, batch after batch, and keeps its
// encoder across garbage collections: franz-go's pooled one was dropped
// by every collection, and the next pass allocated and cleared a new
// encoder's megabyte of tables.
func TestZstdCompressorKeepsItsEncoderAndFranzGosBytes(t *testing.T) {
	f := bareFeed()
	cl, err := dispatch.NewClient(f)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	comp, ok := cl.OptValue(kgo.WithCompressor).(kgo.Compressor)
	if !ok || comp == nil {
		t.Fatal("the client has no compressor")
	}
	ref, err := kgo.DefaultCompressor(kgo.ZstdCompression())
	if err != nil {
		t.Fatal(err)
	}
	// Batches as the dispatcher's: JSON records, small ones at a steady
	// rate, large ones in a backlog.
	var batches [][]byte
	for _, n := range []int{1, 2, 1, 50, 1, 700, 3} {
		var b []byte
		for i := range n {
			b = fmt.Appendf(b, `{"CHANGED":["ESTT"],"FLID":%d,"MSG_ID":%d,"STATE_VERSION":%d,"STYP":"ESTT","TYPE":"FLOP","GATE":"A%d"}`, 500000+i, 1000+i, 3+i%5, i%40)
		}
		batches = append(batches, b)
	}
	for i, b := range batches {
		var got, want bytes.Buffer
		g, gc := comp.Compress(&got, b)
		w, wc := ref.Compress(&want, b)
		if gc != wc || !bytes.Equal(g, w) {
			t.Fatalf("batch %d (%d bytes): codec %d, %d bytes; franz-go's default: codec %d, %d bytes", i, len(b), gc, len(g), wc, len(w))
		}
	}
	if out, codec := comp.Compress(new(bytes.Buffer), batches[0], kgo.CompressDisableZstd); codec != kgo.CodecNone || !bytes.Equal(out, batches[0]) {
		t.Fatalf("a broker without zstd got codec %d", codec)
	}
	var buf bytes.Buffer
	var before, after runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.ReadMemStats(&before)
		buf.Reset()
		comp.Compress(&buf, batches[0])
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<10 {
			t.Fatalf("a batch compressed after a collection allocated %d bytes: a new encoder", grew)
		}
	}
}

// NewClient's errors leave naming the client to the caller, so the message
// a feed reports says "kafka client:" once; and a broker entry written with
// credentials is refused without repeating them.
func TestNewClientErrorsReadOnceAndHideCredentials(t *testing.T) {
	t.Parallel()
	const marker = "Zq9Marker"
	for name, c := range map[string]struct {
		edit func(*config.Feed)
		want string
	}{
		"CA without PEM": {func(f *config.Feed) { f.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{}; f.Secrets.Kafka.CA = []byte("junk") },
			"kafka client: tls: the CA holds no PEM certificate"},
		"unknown mechanism": {func(f *config.Feed) { f.Spec.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: "GSSAPI"} },
			`kafka client: sasl: mechanism "GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		"no brokers": {func(f *config.Feed) { f.Spec.Kafka.Brokers = nil }, "kafka client: no seed brokers"},
		"credentials in a broker": {func(f *config.Feed) { f.Spec.Kafka.Brokers = []string{"user:" + marker + "@127.0.0.1:1"} },
			"kafka client: seed broker ***@127.0.0.1:1: credentials belong in kafka.sasl"},
	} {
		f := bareFeed()
		c.edit(f)
		cl, err := dispatch.NewClient(f)
		if err == nil {
			cl.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		// As feedrun.Start reports it.
		msg := fmt.Errorf("kafka client: %w", err).Error()
		if !strings.HasPrefix(msg, c.want) || strings.Count(msg, "kafka client") != 1 || strings.Contains(msg, marker) {
			t.Errorf("%s: %q, want %q once and no credential", name, msg, c.want)
		}
	}
}

// bareFeed is a defaulted feed (as package config hands it over) with one
// unreachable seed broker and nothing else set.
func bareFeed() *config.Feed {
	f := &config.Feed{Spec: v1alpha1.FlightFeedSpec{Kafka: v1alpha1.KafkaSpec{Brokers: []string{"127.0.0.1:1"}}}}
	config.SetDefaults(&f.Spec)
	return f
}
