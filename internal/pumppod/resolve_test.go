package pumppod_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// TestResolveFeed reads the Secrets a FlightFeed references from the API
// server and reports what is missing by field.
func TestResolveFeed(t *testing.T) {
	c := kubetest.Client(t, restCfg)
	ctx := t.Context()
	ns := "t-resolve-" + utilrand.String(6)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// Labelled, and annotated as the owner of a Secret of feed pek's
	// would: for pek, its credentials for the feed's broker.
	pekOnly := map[string]string{v1alpha1.FeedsAnnotation: "pek", v1alpha1.BrokersAnnotation: "127.0.0.1:9092"}
	secretWith := func(name string, annotations, data map[string]string) {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.SecretLabel: "true"},
			Annotations: annotations, Name: name, Namespace: ns}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name string, data map[string]string) { secretWith(name, pekOnly, data) }
	secret("mbx", map[string]string{"dsn": "root@tcp(127.0.0.1:3306)/mbx"})
	secret("db", map[string]string{"dsn": "postgres://postgres@127.0.0.1:5432/ff", "other": "x"})
	secret("tls", map[string]string{"ca.crt": "CA", "tls.crt": "CERT", "tls.key": "KEY"})
	secret("tls-half", map[string]string{"tls.crt": "CERT"})
	secret("sasl", map[string]string{"username": "u", "password": "p"})
	secret("sasl-nopass", map[string]string{"username": "u"})
	// Unlabelled, or labelled other than "true": not the operator's to use.
	for name, label := range map[string]string{"db-unlabelled": "", "sasl-labelled-yes": "yes"} {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			StringData: map[string]string{"dsn": "postgres://postgres:unlabelled-marker@127.0.0.1:5432/ff", "username": "u", "password": "unlabelled-marker"}}
		if label != "" {
			obj.Labels = map[string]string{v1alpha1.SecretLabel: label}
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// Whose feeds and brokers the annotations say.
	sasl := map[string]string{"username": "u", "password": "unlabelled-marker"}
	secretWith("sasl-pvg", map[string]string{v1alpha1.FeedsAnnotation: "pvg", v1alpha1.BrokersAnnotation: "127.0.0.1:9092"}, sasl)
	secretWith("sasl-every-feed", map[string]string{v1alpha1.FeedsAnnotation: "*", v1alpha1.BrokersAnnotation: "127.0.0.1"}, sasl)
	secretWith("sasl-nobrokers", map[string]string{v1alpha1.FeedsAnnotation: "pek"}, sasl)
	secretWith("sasl-badbrokers", map[string]string{v1alpha1.FeedsAnnotation: "pek", v1alpha1.BrokersAnnotation: "*.example:9092"}, sasl)
	secretWith("db-nofeeds", nil, map[string]string{"dsn": "postgres://postgres:unlabelled-marker@127.0.0.1:5432/ff"})
	secretWith("db-badfeeds", map[string]string{v1alpha1.FeedsAnnotation: "pek,,pvg"}, map[string]string{"dsn": "postgres://postgres:unlabelled-marker@127.0.0.1:5432/ff"})
	pki := testpki.New(t, "database CA", "db.test")
	secret("db-tls", map[string]string{"ca.crt": string(pki.CAPEM), "tls.crt": string(pki.ClientCertPEM), "tls.key": string(pki.ClientKeyPEM)})
	secret("db-tls-badca", map[string]string{"ca.crt": "not PEM"})
	secret("mbx-files", map[string]string{"dsn": "root:Zq9Marker@tcp(127.0.0.1:3306)/mbx?allowAllFiles=true"})
	secret("db-passfile", map[string]string{"dsn": "postgres://postgres:Zq9Marker@127.0.0.1:5432/ff?passfile=/etc/passwd"})
	secret("mbx-remote", map[string]string{"dsn": "root:Zq9Marker@tcp(mysql.ops:3306)/mbx"})
	secret("db-remote", map[string]string{"dsn": "postgres://postgres:Zq9Marker@db.ops:5432/ff?sslmode=prefer"})
	secret("db-require", map[string]string{"dsn": "postgres://postgres:Zq9Marker@db.ops:5432/ff?sslmode=require&require_auth=md5"})
	secret("mbx-skipverify", map[string]string{"dsn": "root:Zq9Marker@tcp(mysql.ops:3306)/mbx?tls=skip-verify"})

	base := func() *v1alpha1.FlightFeed {
		return &v1alpha1.FlightFeed{
			ObjectMeta: metav1.ObjectMeta{Name: "pek", Namespace: ns},
			Spec: v1alpha1.FlightFeedSpec{
				Airport:  v1alpha1.AirportSpec{IATA: "PEK"},
				Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "mbx", Key: "dsn"}},
				Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: "db", Key: "dsn"}},
				Kafka: v1alpha1.KafkaSpec{Brokers: []string{"127.0.0.1:9092"},
					TLS:  &v1alpha1.KafkaTLS{SecretRef: &v1alpha1.SecretRef{Name: "tls"}},
					SASL: &v1alpha1.KafkaSASL{Mechanism: "PLAIN", SecretRef: v1alpha1.SecretRef{Name: "sasl"}}},
			},
		}
	}

	ff := base()
	feed, err := pumppod.ResolveFeed(ctx, c, ff)
	if err != nil {
		t.Fatal(err)
	}
	s := feed.Secrets
	if s.MailboxDSN != "root@tcp(127.0.0.1:3306)/mbx" || s.DatabaseDSN != "postgres://postgres@127.0.0.1:5432/ff" ||
		string(s.Kafka.CA) != "CA" || string(s.Kafka.Cert) != "CERT" || string(s.Kafka.Key) != "KEY" ||
		s.Kafka.Username != "u" || s.Kafka.Password != "p" {
		t.Fatalf("secrets %+v", s)
	}
	if feed.Spec.Mailbox.BatchSize != config.DefaultBatchSize || feed.Location.String() != "Asia/Shanghai" || ff.Spec.Mailbox.BatchSize != 0 {
		t.Fatal("defaults were not applied to the resolved copy only")
	}

	for _, tc := range []struct {
		name   string
		mod    func(*v1alpha1.FlightFeed)
		reason v1alpha1.ConditionReason
		want   string
	}{
		{"missing secret", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "nope" },
			v1alpha1.ReasonSecretUnavailable, "spec.database.dsnSecretRef.name: secret " + ns + "/nope not found"},
		{"missing key", func(f *v1alpha1.FlightFeed) { f.Spec.Mailbox.DSNSecretRef.Key = "password" },
			v1alpha1.ReasonSecretUnavailable, "spec.mailbox.dsnSecretRef.key: secret " + ns + `/mbx has no (or an empty) key "password"`},
		{"certificate without key", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.TLS.SecretRef.Name = "tls-half" },
			v1alpha1.ReasonSecretUnavailable, "spec.kafka.tls.secretRef: secret " + ns + "/tls-half must hold both tls.crt and tls.key"},
		{"SASL without password", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.SASL.SecretRef.Name = "sasl-nopass" },
			v1alpha1.ReasonSecretUnavailable, "spec.kafka.sasl.secretRef.name: secret " + ns + `/sasl-nopass has no (or an empty) key "password"`},
		{"unlabelled secret", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-unlabelled" },
			v1alpha1.ReasonSecretNotLabeled, "spec.database.dsnSecretRef.name: secret " + ns + "/db-unlabelled is not labelled flightfeed.aero/secret=true, " +
				"and the operator uses only Secrets so labelled: kubectl label secret -n " + ns + " db-unlabelled flightfeed.aero/secret=true"},
		{"unlabelled secret without the feeds annotation", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-unlabelled" },
			v1alpha1.ReasonSecretNotLabeled, "kubectl label secret -n " + ns + " db-unlabelled flightfeed.aero/secret=true; it must also name the feed: " +
				"kubectl annotate secret -n " + ns + " db-unlabelled --overwrite flightfeed.aero/feeds=pek"},
		{"secret without the feeds annotation", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-nofeeds" },
			v1alpha1.ReasonSecretNotForFeed, "spec.database.dsnSecretRef.name: secret " + ns + "/db-nofeeds has no annotation flightfeed.aero/feeds, " +
				"and a Secret is used only by the feeds it names: feed pek does not start and sends nothing until the Secret's owner names it: " +
				"kubectl annotate secret -n " + ns + " db-nofeeds --overwrite flightfeed.aero/feeds=pek"},
		{"another feed's SASL secret", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.SASL.SecretRef.Name = "sasl-pvg" },
			v1alpha1.ReasonSecretNotForFeed, "spec.kafka.sasl.secretRef.name: secret " + ns + "/sasl-pvg is for the feeds pvg (annotation flightfeed.aero/feeds), " +
				"not for feed pek: feed pek does not start and sends nothing; if the Secret's owner means pek to use it: " +
				"kubectl annotate secret -n " + ns + " sasl-pvg --overwrite flightfeed.aero/feeds=pvg,pek"},
		{"another feed's TLS secret", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.TLS.SecretRef.Name = "sasl-pvg" },
			v1alpha1.ReasonSecretNotForFeed, "spec.kafka.tls.secretRef.name: secret " + ns + "/sasl-pvg is for the feeds pvg"},
		{"another feed's mailbox TLS secret", func(f *v1alpha1.FlightFeed) {
			f.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "sasl-pvg"}}
		}, v1alpha1.ReasonSecretNotForFeed, "spec.mailbox.tls.secretRef.name: secret " + ns + "/sasl-pvg is for the feeds pvg"},
		{"another feed's read DSN secret", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "sasl-pvg", Key: "password"}
		}, v1alpha1.ReasonSecretNotForFeed, "spec.database.readDsnSecretRef.name: secret " + ns + "/sasl-pvg is for the feeds pvg"},
		{"feeds annotation that does not parse", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-badfeeds" },
			v1alpha1.ReasonInvalidSecret, "spec.database.dsnSecretRef.name: secret " + ns + `/db-badfeeds annotation flightfeed.aero/feeds: invalid annotation: "pek,,pvg" has an empty item`},
		{"broker the SASL secret does not allow", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.Brokers = []string{"127.0.0.1:9092", "Evil.test:9093"} },
			v1alpha1.ReasonBrokersNotAllowed, "spec.kafka.brokers: secret " + ns + "/sasl (kafka.sasl.secretRef of feed pek) allows its credentials to go to " +
				"127.0.0.1:9092 only (annotation flightfeed.aero/brokers), not to Evil.test:9093: nothing is sent; if its owner means them to go there: " +
				"kubectl annotate secret -n " + ns + " sasl --overwrite flightfeed.aero/brokers=127.0.0.1:9092,Evil.test:9093"},
		{"port the SASL secret does not allow", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.Brokers = []string{"127.0.0.1:19092"} },
			v1alpha1.ReasonBrokersNotAllowed, "not to 127.0.0.1:19092: nothing is sent"},
		{"SASL secret without the brokers annotation", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.SASL.SecretRef.Name = "sasl-nobrokers" },
			v1alpha1.ReasonBrokersNotAllowed, "spec.kafka.brokers: secret " + ns + "/sasl-nobrokers (kafka.sasl.secretRef of feed pek) has no annotation " +
				"flightfeed.aero/brokers, and SASL credentials go only to the brokers their Secret lists: nothing is sent to 127.0.0.1:9092; " +
				"if its owner means them to go there: kubectl annotate secret -n " + ns + " sasl-nobrokers --overwrite flightfeed.aero/brokers=127.0.0.1:9092"},
		{"brokers annotation that does not parse", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.SASL.SecretRef.Name = "sasl-badbrokers" },
			v1alpha1.ReasonInvalidSecret, "spec.kafka.brokers: secret " + ns + `/sasl-badbrokers annotation flightfeed.aero/brokers: invalid annotation: "*.example:9092": no wildcards`},
		{"secret labelled other than true", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.SASL.SecretRef.Name = "sasl-labelled-yes" },
			v1alpha1.ReasonSecretNotLabeled, "spec.kafka.sasl.secretRef.name: secret " + ns + "/sasl-labelled-yes is not labelled"},
		{"mailbox DSN with allowAllFiles", func(f *v1alpha1.FlightFeed) { f.Spec.Mailbox.DSNSecretRef.Name = "mbx-files" },
			v1alpha1.ReasonInvalidSecret, "spec.mailbox.dsnSecretRef: secret " + ns + `/mbx-files key "dsn": mailbox DSN: option allowAllFiles=true is refused`},
		{"database DSN with passfile", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-passfile" },
			v1alpha1.ReasonInvalidSecret, "spec.database.dsnSecretRef: secret " + ns + `/db-passfile key "dsn": database DSN: key "passfile" is refused`},
		{"read DSN with passfile", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "db-passfile", Key: "dsn"}
		}, v1alpha1.ReasonInvalidSecret, "spec.database.readDsnSecretRef: secret " + ns + `/db-passfile key "dsn": database DSN: key "passfile" is refused`},
		{"mailbox TLS secret missing", func(f *v1alpha1.FlightFeed) {
			f.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "nope"}}
		}, v1alpha1.ReasonSecretUnavailable, "spec.mailbox.tls.secretRef.name: secret " + ns + "/nope not found"},
		{"database TLS CA not PEM", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "db-tls-badca"}}
		}, v1alpha1.ReasonInvalidSecret, "spec.database.tls.secretRef: secret " + ns + "/db-tls-badca: ca.crt holds no PEM certificate"},
		{"database TLS certificate without key", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "tls-half"}}
		}, v1alpha1.ReasonInvalidSecret, "spec.database.tls.secretRef: secret " + ns + "/tls-half: tls.crt and tls.key must be given together"},
		{"mailbox in plain text on the network", func(f *v1alpha1.FlightFeed) { f.Spec.Mailbox.DSNSecretRef.Name = "mbx-remote" },
			v1alpha1.ReasonPlaintextRefused, "spec.mailbox.dsnSecretRef: secret " + ns + `/mbx-remote key "dsn": plain text to mysql.ops:3306 is refused`},
		{"database in plain text on the network", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-remote" },
			v1alpha1.ReasonPlaintextRefused, "spec.database.dsnSecretRef: secret " + ns + `/db-remote key "dsn": plain text to db.ops:5432 is refused`},
		{"read database in plain text on the network", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "db-remote", Key: "dsn"}
		}, v1alpha1.ReasonPlaintextRefused, "spec.database.readDsnSecretRef: secret " + ns + `/db-remote key "dsn": plain text to db.ops:5432 is refused`},
		{"database over unverified TLS", func(f *v1alpha1.FlightFeed) { f.Spec.Database.DSNSecretRef.Name = "db-require" },
			v1alpha1.ReasonUnverifiedTLSRefused, "spec.database.dsnSecretRef: secret " + ns + `/db-require key "dsn": unverified TLS (sslmode=require) to db.ops:5432 is refused`},
		{"read database over unverified TLS", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.ReadDSNSecretRef = &v1alpha1.SecretKeyRef{Name: "db-require", Key: "dsn"}
		}, v1alpha1.ReasonUnverifiedTLSRefused, "spec.database.readDsnSecretRef: secret " + ns + `/db-require key "dsn": unverified TLS (sslmode=require) to db.ops:5432 is refused`},
		{"mailbox over unverified TLS", func(f *v1alpha1.FlightFeed) { f.Spec.Mailbox.DSNSecretRef.Name = "mbx-skipverify" },
			v1alpha1.ReasonUnverifiedTLSRefused, "spec.mailbox.dsnSecretRef: secret " + ns + `/mbx-skipverify key "dsn": mailbox DSN: option tls=skip-verify is refused`},
		{"unverified opt-in with a server name", func(f *v1alpha1.FlightFeed) {
			f.Spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified, ServerName: "db.ops"}
		}, v1alpha1.ReasonInvalidSpec, "spec.database.tls.mode: Invalid value: \"unverified\""},
		{"opt-in with a TLS Secret", func(f *v1alpha1.FlightFeed) {
			f.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable, SecretRef: &v1alpha1.SecretRef{Name: "db-tls"}}
		}, v1alpha1.ReasonInvalidSpec, "spec.mailbox.tls.mode: Invalid value: \"disable\""},
		{"unknown time zone", func(f *v1alpha1.FlightFeed) { f.Spec.Airport.TimeZone = "Mars/Olympus_Mons" },
			v1alpha1.ReasonInvalidSpec, "spec.airport.timeZone"},
		{"same topics", func(f *v1alpha1.FlightFeed) { f.Spec.Kafka.Topics = v1alpha1.KafkaTopics{State: "T", Notice: "T"} },
			v1alpha1.ReasonInvalidSpec, "spec.kafka.topics.notice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ff := base()
			tc.mod(ff)
			_, err := pumppod.ResolveFeed(ctx, c, ff)
			var ce *pumppod.ConfigError
			if err == nil || !errors.As(err, &ce) || ce.Reason != tc.reason || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s: %s", err, tc.reason, tc.want)
			}
			if strings.Contains(err.Error(), "unlabelled-marker") {
				t.Fatalf("the error carries the Secret's data: %v", err)
			}
			if strings.Contains(err.Error(), "Zq9Marker") {
				t.Fatalf("the error shows a password: %v", err)
			}
		})
	}

	// "*" lets every feed of the namespace use a Secret; a host without a
	// port allows each of its ports.
	ff = base()
	ff.Spec.Kafka.SASL.SecretRef.Name = "sasl-every-feed"
	ff.Spec.Kafka.Brokers = []string{"127.0.0.1:9092", "127.0.0.1:19092"}
	if feed, err = pumppod.ResolveFeed(ctx, c, ff); err != nil || feed.Secrets.Kafka.Password != "unlabelled-marker" {
		t.Fatalf("a Secret for every feed: %v", err)
	}

	// mailbox.tls and database.tls read their Secrets' keys.
	ff = base()
	ff.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "db-tls"}, ServerName: "mailbox.test"}
	ff.Spec.Database.TLS = &v1alpha1.ServerTLS{SecretRef: &v1alpha1.SecretRef{Name: "db-tls"}}
	if feed, err = pumppod.ResolveFeed(ctx, c, ff); err != nil {
		t.Fatal(err)
	}
	for _, m := range []config.TLSMaterial{feed.Secrets.MailboxTLS, feed.Secrets.DatabaseTLS} {
		if string(m.CA) != string(pki.CAPEM) || string(m.Cert) != string(pki.ClientCertPEM) || string(m.Key) != string(pki.ClientKeyPEM) {
			t.Fatalf("TLS material %+v", m)
		}
	}
	if cfg, err := feed.MailboxTLS(); err != nil || cfg.ServerName != "mailbox.test" || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("mailbox TLS %+v, %v", cfg, err)
	}

	// The opt-in lets both reach the network in plain text.
	ff = base()
	ff.Spec.Mailbox.DSNSecretRef.Name, ff.Spec.Database.DSNSecretRef.Name = "mbx-remote", "db-remote"
	ff.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}
	ff.Spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSDisable}
	if feed, err = pumppod.ResolveFeed(ctx, c, ff); err != nil {
		t.Fatalf("opted in, refused: %v", err)
	}
	if w := config.PlaintextWarning(config.PlaintextOf(&feed.Spec, feed.Secrets)); !strings.Contains(w, "mailbox mysql.ops:3306; database db.ops:5432") {
		t.Fatalf("warning %q", w)
	}

	// The unverified opt-in lets both use TLS without verification, shown
	// with the weak require_auth.
	ff = base()
	ff.Spec.Mailbox.DSNSecretRef.Name, ff.Spec.Database.DSNSecretRef.Name = "mbx-skipverify", "db-require"
	ff.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
	ff.Spec.Database.TLS = &v1alpha1.ServerTLS{Mode: v1alpha1.TLSUnverified}
	if feed, err = pumppod.ResolveFeed(ctx, c, ff); err != nil {
		t.Fatalf("opted in to unverified TLS, refused: %v", err)
	}
	if w := config.UnverifiedWarning(config.UnverifiedOf(&feed.Spec, feed.Secrets)); !strings.Contains(w, "mailbox mysql.ops:3306 (tls=skip-verify); database db.ops:5432 (sslmode=require)") {
		t.Fatalf("warning %q", w)
	}
	if w := config.WeakAuthWarning(config.WeakAuthOf(feed.Secrets)); !strings.Contains(w, "database require_auth=md5 permits md5") {
		t.Fatalf("warning %q", w)
	}

	// Without TLS material the Secret is optional; a plain feed resolves.
	ff = base()
	ff.Spec.Kafka.TLS = &v1alpha1.KafkaTLS{ServerName: "kafka"}
	ff.Spec.Kafka.SASL = nil
	if _, err := pumppod.ResolveFeed(ctx, c, ff); err != nil {
		t.Fatal(err)
	}

	// A pump pod in the cluster: the broker on 127.0.0.1 (which the test
	// harness's pump, a process of this machine, dials) is the pod itself,
	// refused with the reason before any Secret is read; another broker
	// of the feed is not.
	_, err = pumppod.ResolveFeedWith(ctx, c, ff, pumppod.ResolveOptions{InCluster: true})
	var ce *pumppod.ConfigError
	if !errors.As(err, &ce) || ce.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(err.Error(), "spec.kafka.brokers[0]") ||
		!strings.Contains(err.Error(), "the pod itself") {
		t.Fatalf("in the cluster, a loopback broker: %v, want InvalidSpec naming spec.kafka.brokers[0]", err)
	}
	ff.Spec.Kafka.Brokers = []string{"kafka.example:9092"}
	if _, err := pumppod.ResolveFeedWith(ctx, c, ff, pumppod.ResolveOptions{InCluster: true}); err != nil {
		t.Fatalf("in the cluster, a broker by name: %v", err)
	}
}
