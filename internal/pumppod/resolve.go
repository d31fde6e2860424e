package pumppod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/secretconsent"
)

// ConfigError means a FlightFeed cannot run as it stands: its spec does not
// validate, or a referenced Secret is missing, not labelled
// v1alpha1.SecretLabel=true, does not name the feed in
// v1alpha1.FeedsAnnotation, or (kafka.sasl) does not allow every broker in
// v1alpha1.BrokersAnnotation. It is reported in the status (Reason); the
// reconciler reads the Secrets again at every resync, so a Secret created or
// labelled later is picked up without touching the FlightFeed.
type ConfigError struct {
	Reason v1alpha1.ConditionReason
	Err    error
}

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Keys of the TLS Secrets (kafka.tls, mailbox.tls, database.tls) and of
// the SASL Secret.
const (
	KeyCA       = "ca.crt"
	KeyCert     = corev1.TLSCertKey
	KeyKey      = corev1.TLSPrivateKeyKey
	KeyUsername = corev1.BasicAuthUsernameKey
	KeyPassword = corev1.BasicAuthPasswordKey
)

// ResolveFeed turns a FlightFeed into the resolved feed its pump runs: the
// spec with defaults applied and validated (config.SetDefaults and
// config.ValidateSpec, errors named under "spec"), and the credentials read
// from its Secrets. The resource itself is not modified. A *ConfigError
// names what the user must fix; any other error is transient (reading a
// Secret failed) and worth a retry.
func ResolveFeed(ctx context.Context, secrets client.Reader, ff *v1alpha1.FlightFeed) (*config.Feed, error) {
	return ResolveFeedWith(ctx, secrets, ff, ResolveOptions{})
}

// ResolveOptions are what ResolveFeed takes from where the pump runs.
type ResolveOptions struct {
	// InCluster: the pump runs in a pod of the cluster, whose loopback is
	// the pod itself: kafka.brokers on loopback are refused
	// (config.InClusterBrokers) rather than dialled.
	InCluster bool
}

// ResolveFeedWith is ResolveFeed for a pump that runs as o says.
func ResolveFeedWith(ctx context.Context, secrets client.Reader, ff *v1alpha1.FlightFeed, o ResolveOptions) (*config.Feed, error) {
	spec := *ff.Spec.DeepCopy()
	config.SetDefaults(&spec)
	loc, errs := config.ValidateSpec(&spec, field.NewPath("spec"))
	if o.InCluster {
		errs = append(errs, config.InClusterBrokers(&spec, field.NewPath("spec"))...)
	}
	if len(errs) > 0 {
		return nil, &ConfigError{Reason: v1alpha1.ReasonInvalidSpec, Err: errs.ToAggregate()}
	}
	r := secretReader{ctx: ctx, reader: secrets, namespace: ff.Namespace, feed: ff.Name, cache: map[string]*corev1.Secret{}}
	sp := field.NewPath("spec")
	var out config.Secrets
	var err error
	mp, dp := sp.Child("mailbox", "dsnSecretRef"), sp.Child("database", "dsnSecretRef")
	if out.MailboxDSN, err = r.key(mp, mp.Child("key"), spec.Mailbox.DSNSecretRef); err != nil {
		return nil, err
	}
	if out.DatabaseDSN, err = r.key(dp, dp.Child("key"), spec.Database.DSNSecretRef); err != nil {
		return nil, err
	}
	if err := checkDSN(mp, ff.Namespace, spec.Mailbox.DSNSecretRef, "mailbox", config.CheckMailboxDSN(out.MailboxDSN, spec.Mailbox.TLS)); err != nil {
		return nil, err
	}
	if err := checkDSN(dp, ff.Namespace, spec.Database.DSNSecretRef, "database", config.CheckDatabaseDSN(out.DatabaseDSN)); err != nil {
		return nil, err
	}
	if ref := spec.Database.ReadDSNSecretRef; ref != nil {
		rp := sp.Child("database", "readDsnSecretRef")
		if out.ReadDatabaseDSN, err = r.key(rp, rp.Child("key"), *ref); err != nil {
			return nil, err
		}
		if err := checkDSN(rp, ff.Namespace, *ref, "database", config.CheckDatabaseDSN(out.ReadDatabaseDSN)); err != nil {
			return nil, err
		}
	}
	if t := spec.Kafka.TLS; t != nil && t.SecretRef != nil {
		path := sp.Child("kafka", "tls", "secretRef")
		s, err := r.secret(path, t.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		out.Kafka.CA, out.Kafka.Cert, out.Kafka.Key = s.Data[KeyCA], s.Data[KeyCert], s.Data[KeyKey]
		if (len(out.Kafka.Cert) == 0) != (len(out.Kafka.Key) == 0) {
			return nil, &ConfigError{Reason: v1alpha1.ReasonSecretUnavailable, Err: fmt.Errorf(
				"%s: secret %s/%s must hold both %s and %s, or neither", path, ff.Namespace, t.SecretRef.Name, KeyCert, KeyKey)}
		}
	}
	for _, t := range []struct {
		spec *v1alpha1.ServerTLS
		path *field.Path
		out  *config.TLSMaterial
	}{
		{spec.Mailbox.TLS, sp.Child("mailbox", "tls", "secretRef"), &out.MailboxTLS},
		{spec.Database.TLS, sp.Child("database", "tls", "secretRef"), &out.DatabaseTLS},
	} {
		if t.spec == nil || t.spec.SecretRef == nil {
			continue
		}
		s, err := r.secret(t.path, t.spec.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		*t.out = config.TLSMaterial{CA: s.Data[KeyCA], Cert: s.Data[KeyCert], Key: s.Data[KeyKey]}
		if _, err := config.ClientTLS(t.spec, *t.out); err != nil {
			return nil, &ConfigError{Reason: v1alpha1.ReasonInvalidSecret, Err: fmt.Errorf(
				"%s: secret %s/%s: %w", t.path, ff.Namespace, t.spec.SecretRef.Name, err)}
		}
	}
	if err := checkPlaintext(sp, ff.Namespace, &spec, out); err != nil {
		return nil, err
	}
	if err := checkUnverified(sp, ff.Namespace, &spec, out); err != nil {
		return nil, err
	}
	if s := spec.Kafka.SASL; s != nil {
		path := sp.Child("kafka", "sasl", "secretRef")
		sec, err := r.secret(path, s.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		// Before a key is read: a feed whose brokers the Secret does not
		// allow gets no credentials, so nothing can dial with them.
		if err := checkBrokers(sp.Child("kafka", "brokers"), ff, sec, spec.Kafka.Brokers); err != nil {
			return nil, err
		}
		// The keys are fixed, so a missing one is charged to the Secret's name.
		if out.Kafka.Username, err = r.key(path, path.Child("name"), v1alpha1.SecretKeyRef{Name: s.SecretRef.Name, Key: KeyUsername}); err != nil {
			return nil, err
		}
		if out.Kafka.Password, err = r.key(path, path.Child("name"), v1alpha1.SecretKeyRef{Name: s.SecretRef.Name, Key: KeyPassword}); err != nil {
			return nil, err
		}
	}
	return &config.Feed{Namespace: ff.Namespace, Name: ff.Name, Spec: spec, Location: loc, Secrets: out}, nil
}

// checkDSN turns what config refused in a DSN read from a Secret into a
// *ConfigError (InvalidSecret; UnverifiedTLSRefused for the mailbox's
// tls=skip-verify without the opt-in) that names the Secret and key, never
// the DSN: the config checks quote no credential, and the DSN is not
// quoted at all.
func checkDSN(path *field.Path, namespace string, ref v1alpha1.SecretKeyRef, what string, err error) error {
	if err == nil {
		return nil
	}
	reason := v1alpha1.ReasonInvalidSecret
	if errors.Is(err, config.ErrUnverifiedTLS) {
		reason = v1alpha1.ReasonUnverifiedTLSRefused
	}
	return &ConfigError{Reason: reason,
		Err: fmt.Errorf("%s: secret %s/%s key %q: %s DSN: %w", path, namespace, ref.Name, ref.Key, what, err)}
}

// checkPlaintext refuses a DSN that reaches an address other than
// loopback in plain text without the feed's opt-in (config.PlaintextOf),
// as a *ConfigError (PlaintextRefused) naming the Secret, its key and the
// address, never the DSN.
func checkPlaintext(sp *field.Path, namespace string, spec *v1alpha1.FlightFeedSpec, s config.Secrets) error {
	for _, p := range config.PlaintextOf(spec, s) {
		if err := p.Err(); err != nil {
			path, ref := dsnRef(sp, spec, p.Dependency)
			return &ConfigError{Reason: v1alpha1.ReasonPlaintextRefused,
				Err: fmt.Errorf("%s: secret %s/%s key %q: %w", path, namespace, ref.Name, ref.Key, err)}
		}
	}
	return nil
}

// checkBrokers refuses a kafka.sasl Secret whose annotation
// v1alpha1.BrokersAnnotation is missing, invalid, or does not allow every
// host of kafka.brokers (secretconsent.CheckBrokers), as a *ConfigError
// (BrokersNotAllowed, or InvalidSecret for a value that does not parse)
// naming the Secret, the feed and the hosts, with the command that would
// allow them. Annotations are no credentials, but a Secret's owner may
// write anything there: the value is shown only as parsed (hosts and
// ports), and a value that does not parse is quoted by its error.
func checkBrokers(path *field.Path, ff *v1alpha1.FlightFeed, sec *corev1.Secret, brokers []string) error {
	v, present := sec.Annotations[v1alpha1.BrokersAnnotation]
	allowed, refused, err := secretconsent.CheckBrokers(v, present, brokers)
	if err == nil {
		return nil
	}
	ns, name, a := ff.Namespace, sec.Name, v1alpha1.BrokersAnnotation
	annotate := fmt.Sprintf("kubectl annotate secret -n %s %s --overwrite %s=%s", ns, name, a, secretconsent.BrokersWith(allowed, refused))
	switch {
	case errors.Is(err, secretconsent.ErrMissing):
		err = fmt.Errorf("%s: secret %s/%s (kafka.sasl.secretRef of feed %s) has no annotation %s, and SASL credentials go "+
			"only to the brokers their Secret lists: nothing is sent to %s; if its owner means them to go there: %s",
			path, ns, name, ff.Name, a, strings.Join(refused, ","), annotate)
	case errors.Is(err, secretconsent.ErrNotAllowed):
		err = fmt.Errorf("%s: secret %s/%s (kafka.sasl.secretRef of feed %s) allows its credentials to go to %s only "+
			"(annotation %s), not to %s: nothing is sent; if its owner means them to go there: %s",
			path, ns, name, ff.Name, secretconsent.BrokersWith(allowed, nil), a, strings.Join(refused, ","), annotate)
	default:
		return &ConfigError{Reason: v1alpha1.ReasonInvalidSecret,
			Err: fmt.Errorf("%s: secret %s/%s annotation %s: %w", path, ns, name, a, err)}
	}
	return &ConfigError{Reason: v1alpha1.ReasonBrokersNotAllowed, Err: err}
}

// checkUnverified refuses a DSN that reaches an address over TLS without
// verifying the server's certificate, without the feed's opt-in
// (config.UnverifiedOf), as a *ConfigError (UnverifiedTLSRefused) naming
// the Secret, its key and the address, never the DSN.
func checkUnverified(sp *field.Path, namespace string, spec *v1alpha1.FlightFeedSpec, s config.Secrets) error {
	for _, u := range config.UnverifiedOf(spec, s) {
		if err := u.Err(); err != nil {
			path, ref := dsnRef(sp, spec, u.Dependency)
			return &ConfigError{Reason: v1alpha1.ReasonUnverifiedTLSRefused,
				Err: fmt.Errorf("%s: secret %s/%s key %q: %w", path, namespace, ref.Name, ref.Key, err)}
		}
	}
	return nil
}

// dsnRef is the spec field and Secret reference of a dependency's DSN.
func dsnRef(sp *field.Path, spec *v1alpha1.FlightFeedSpec, dependency string) (*field.Path, v1alpha1.SecretKeyRef) {
	switch dependency {
	case "database":
		return sp.Child("database", "dsnSecretRef"), spec.Database.DSNSecretRef
	case "read database":
		return sp.Child("database", "readDsnSecretRef"), *spec.Database.ReadDSNSecretRef
	default:
		return sp.Child("mailbox", "dsnSecretRef"), spec.Mailbox.DSNSecretRef
	}
}

// secretReader reads each Secret once per resolution, for the feed named
// feed.
type secretReader struct {
	ctx       context.Context //nolint:containedctx // lives for one ResolveFeed call
	reader    client.Reader
	namespace string
	feed      string
	cache     map[string]*corev1.Secret
}

func (r *secretReader) secret(path *field.Path, name string) (*corev1.Secret, error) {
	if s, ok := r.cache[name]; ok {
		return s, nil
	}
	var s corev1.Secret
	err := r.reader.Get(r.ctx, types.NamespacedName{Namespace: r.namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		return nil, &ConfigError{Reason: v1alpha1.ReasonSecretUnavailable,
			Err: fmt.Errorf("%s: secret %s/%s not found", path.Child("name"), r.namespace, name)}
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s/%s for %s: %w", r.namespace, name, path, err)
	}
	// Its data is dropped at once on every refusal below: the Secret is
	// not the feed's to use.
	v, present := s.Annotations[v1alpha1.FeedsAnnotation]
	feeds, ferr := secretconsent.CheckFeed(v, present, r.feed)
	annotate := fmt.Sprintf("kubectl annotate secret -n %s %s --overwrite %s=%s", r.namespace, name, v1alpha1.FeedsAnnotation, feeds.With(r.feed))
	if s.Labels[v1alpha1.SecretLabel] != "true" {
		also := ""
		if ferr != nil {
			// Both missing (a Secret of a release before the
			// annotation): one message with both commands.
			also = "; it must also name the feed: " + annotate
		}
		return nil, &ConfigError{Reason: v1alpha1.ReasonSecretNotLabeled,
			Err: fmt.Errorf("%s: secret %s/%s is not labelled %s=true, and the operator uses only Secrets so labelled: "+
				"kubectl label secret -n %s %s %s=true%s", path.Child("name"), r.namespace, name, v1alpha1.SecretLabel,
				r.namespace, name, v1alpha1.SecretLabel, also)}
	}
	switch {
	case ferr == nil:
	case errors.Is(ferr, secretconsent.ErrMissing):
		return nil, &ConfigError{Reason: v1alpha1.ReasonSecretNotForFeed,
			Err: fmt.Errorf("%s: secret %s/%s has no annotation %s, and a Secret is used only by the feeds it names: "+
				"feed %s does not start and sends nothing until the Secret's owner names it: %s",
				path.Child("name"), r.namespace, name, v1alpha1.FeedsAnnotation, r.feed, annotate)}
	case errors.Is(ferr, secretconsent.ErrNotNamed):
		return nil, &ConfigError{Reason: v1alpha1.ReasonSecretNotForFeed,
			Err: fmt.Errorf("%s: secret %s/%s is for the feeds %s (annotation %s), not for feed %s: "+
				"feed %s does not start and sends nothing; if the Secret's owner means %s to use it: %s",
				path.Child("name"), r.namespace, name, feeds, v1alpha1.FeedsAnnotation, r.feed, r.feed, r.feed, annotate)}
	default:
		return nil, &ConfigError{Reason: v1alpha1.ReasonInvalidSecret,
			Err: fmt.Errorf("%s: secret %s/%s annotation %s: %w", path.Child("name"), r.namespace, name, v1alpha1.FeedsAnnotation, ferr)}
	}
	r.cache[name] = &s
	return &s, nil
}

func (r *secretReader) key(refPath, keyPath *field.Path, ref v1alpha1.SecretKeyRef) (string, error) {
	s, err := r.secret(refPath, ref.Name)
	if err != nil {
		return "", err
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 {
		return "", &ConfigError{Reason: v1alpha1.ReasonSecretUnavailable,
			Err: fmt.Errorf("%s: secret %s/%s has no (or an empty) key %q", keyPath, r.namespace, ref.Name, ref.Key)}
	}
	return string(v), nil
}

// configReason returns the reason of a *ConfigError, or "" for other errors.
func configReason(err error) v1alpha1.ConditionReason {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}
