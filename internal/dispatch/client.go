package dispatch

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/recsize"
)

// SASL mechanisms of KafkaSASL.Mechanism.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// DefaultDeliveryTimeout bounds how long a record that was never sent (the
// broker is unreachable) waits before its pass fails and is retried with
// backoff; it is what turns an outage into a reported error. A record
// already sent waits for the broker's answer regardless (idempotence).
const DefaultDeliveryTimeout = 30 * time.Second

// maxBufferedRecords must hold a whole pass: with manual flushing a record
// beyond it fails at once.
const maxBufferedRecords = 4 * maxBatchSize

// DefaultTransactionTimeout is how long the broker keeps a pass's
// transaction open before aborting it. A pass that outlives it (the broker
// unreachable in the middle of a pass) finds its producer refused; while
// the database still names this dispatcher the leader, Run renews the
// client (Options.Renew) and sends the pass again.
const DefaultTransactionTimeout = time.Minute

// ErrClient means the client was not built by NewClient.
var ErrClient = errors.New("kafka client must be built by dispatch.NewClient")

// NewClient builds the feed's idempotent producer from a feed defaulted by
// package config (it sets no defaults of its own): seed brokers, client id,
// TLS and SASL from the feed's configuration, acks from all in-sync
// replicas, keys partitioned with murmur2 exactly like the Java client (so
// consumers in any language agree on a FLID's partition), topics created
// only when kafka.allowAutoTopicCreation is set, and manual flushing (a
// pass buffers all its records before any is sent). With kafka.transactions
// (the default) the producer is transactional, its transactional.id the
// feed's (config.Feed.TransactionalID). Batches are compressed with
// kafka.compression (zstd by encoders kept for the client's life,
// compress.go) and bounded by kafka.maxRecordBytes. opts are appended and may override
// the defaults (tests shorten timeouts), but must keep idempotence,
// acks=all, manual flushing and the transactional id, or New refuses the
// client. Building the client contacts no broker: Run initialises the
// producer.
//
// Its errors say what is wrong without naming the client ("tls: ..."): the
// caller adds that ("kafka client: %w"). They never show a credential.
func NewClient(feed *config.Feed, opts ...kgo.Opt) (*kgo.Client, error) {
	k := feed.Spec.Kafka
	if len(k.Brokers) == 0 {
		return nil, errors.New("no seed brokers")
	}
	// "user:password@host:port" is not an address; the client would dial
	// it and every connection error would print the password.
	for _, b := range k.Brokers {
		if strings.Contains(b, "@") {
			return nil, fmt.Errorf("seed broker %s: credentials belong in kafka.sasl, not in the address", config.RedactDSN(b))
		}
	}
	if k.ClientID == "" {
		return nil, errors.New("no client id (the feed was not defaulted by package config)")
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(k.Brokers...),
		kgo.ClientID(k.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ManualFlushing(),
		kgo.MaxBufferedRecords(maxBufferedRecords),
		kgo.RecordDeliveryTimeout(DefaultDeliveryTimeout),
		kgo.WithHooks(&connWatch{}),
	}
	// A broker's response is bounded by the record size (bound.go).
	base = append(base, boundOpts(k.MaxRecordBytes)...)
	if k.MaxRecordBytes > 0 {
		// The producer refuses a record whose batch alone would be larger,
		// and batches records up to it: the topics' limit, which the pump
		// already enforced at the door (package recsize).
		base = append(base, kgo.ProducerBatchMaxBytes(k.MaxRecordBytes))
	}
	if k.Compression != "" {
		codec, ok := recsize.Codec(k.Compression)
		if !ok {
			return nil, fmt.Errorf("compression %q is not zstd, lz4 or none", k.Compression)
		}
		opt, err := compressionOpt(codec)
		if err != nil {
			return nil, err
		}
		base = append(base, opt)
	}
	if k.AllowAutoTopicCreation {
		base = append(base, kgo.AllowAutoTopicCreation())
	}
	if feed.TransactionsOn() {
		id, err := feed.TransactionalID()
		if err != nil {
			return nil, err
		}
		base = append(base, kgo.TransactionalID(id), kgo.TransactionTimeout(DefaultTransactionTimeout))
	}
	if k.TLS != nil {
		cfg, err := tlsConfig(k.TLS, feed.Secrets.Kafka)
		if err != nil {
			return nil, err
		}
		base = append(base, kgo.DialTLSConfig(cfg))
	}
	if k.SASL != nil {
		mech, err := saslMechanism(k.SASL.Mechanism, feed.Secrets.Kafka)
		if err != nil {
			return nil, err
		}
		base = append(base, kgo.SASL(mech))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// tlsConfig trusts the given CA (system roots when none) and presents the
// client certificate when one is given. An empty ServerName is filled with
// the dialed broker's host by the client.
func tlsConfig(spec *v1alpha1.KafkaTLS, sec config.KafkaSecrets) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: spec.ServerName}
	if len(sec.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(sec.CA) {
			return nil, errors.New("tls: the CA holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	switch {
	case len(sec.Cert) > 0 && len(sec.Key) > 0:
		pair, err := tls.X509KeyPair(sec.Cert, sec.Key)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(sec.Cert) > 0 || len(sec.Key) > 0:
		return nil, errors.New("tls: client certificate and key must be given together")
	}
	return cfg, nil
}

func saslMechanism(name string, sec config.KafkaSecrets) (sasl.Mechanism, error) {
	switch name {
	case MechanismPlain:
		return plain.Auth{User: sec.Username, Pass: sec.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: sec.Username, Pass: sec.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: sec.Username, Pass: sec.Password}.AsSha512Mechanism(), nil
	default:
		return nil, fmt.Errorf("sasl: mechanism %q is not one of %s, %s, %s", name, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
	}
}

// checkClient refuses a client whose settings would break delivery: the
// transactional id must be the feed's when transactions are on, and absent
// when they are off.
func checkClient(cl *kgo.Client, feed *config.Feed) error {
	id, _ := cl.OptValue(kgo.TransactionalID).(string)
	if feed.TransactionsOn() {
		want, err := feed.TransactionalID()
		if err != nil {
			return err
		}
		if id != want {
			return fmt.Errorf("%w: transactional id %q, want the feed's %q", ErrClient, id, want)
		}
	} else if id != "" {
		return fmt.Errorf("%w: transactional id %q with kafka.transactions false", ErrClient, id)
	}
	if manual, _ := cl.OptValue(kgo.ManualFlushing).(bool); !manual {
		return fmt.Errorf("%w: manual flushing is off", ErrClient)
	}
	if off, _ := cl.OptValue(kgo.DisableIdempotentWrite).(bool); off {
		return fmt.Errorf("%w: idempotent writes are off", ErrClient)
	}
	if acks, _ := cl.OptValue(kgo.RequiredAcks).(kgo.Acks); acks != kgo.AllISRAcks() {
		return fmt.Errorf("%w: acks must be all", ErrClient)
	}
	return nil
}

// connWatch remembers the last failed broker connection, so an outage is
// reported as "connection refused", not only as a record timeout.
type connWatch struct {
	mu  sync.Mutex
	err error
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (w *connWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.err = nil
		return
	}
	addr := config.RedactDSN(net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port))))
	w.err = fmt.Errorf("connect to broker %s: %w", addr, err)
}

// last returns the last connection error, nil after a later success.
func (w *connWatch) last() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func watchOf(cl *kgo.Client) *connWatch {
	hooks, _ := cl.OptValue(kgo.WithHooks).([]kgo.Hook)
	for _, h := range hooks {
		if w, ok := h.(*connWatch); ok {
			return w
		}
	}
	return nil
}
