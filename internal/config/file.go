package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// MaxFileBytes bounds a config file; anything larger is not a config file.
const MaxFileBytes = 1 << 20

// fileSpec is the --config file: the FlightFeed spec's shape, except that the
// DSNs and broker credentials are written inline (docs/configuration.md).
type fileSpec struct {
	Airport   v1alpha1.AirportSpec   `json:"airport"`
	Mailbox   fileMailbox            `json:"mailbox"`
	Database  fileDatabase           `json:"database"`
	Kafka     fileKafka              `json:"kafka"`
	Requests  v1alpha1.RequestsSpec  `json:"requests"`
	Retention v1alpha1.RetentionSpec `json:"retention"`
	History   v1alpha1.HistorySpec   `json:"history"`
	Pump      v1alpha1.PumpSpec      `json:"pump"`
}

type fileMailbox struct {
	v1alpha1.MailboxSpec `json:",inline"`
	DSN                  string `json:"dsn"`
	// TLS shadows the spec's Secret-referencing field.
	TLS *fileTLS `json:"tls"`
}

type fileDatabase struct {
	v1alpha1.DatabaseSpec `json:",inline"`
	DSN                   string `json:"dsn"`
	// ReadDSN is a read-only role's DSN (the file's readDsnSecretRef).
	ReadDSN string `json:"readDsn"`
	// TLS shadows the spec's Secret-referencing field.
	TLS *fileTLS `json:"tls"`
}

type fileKafka struct {
	v1alpha1.KafkaSpec `json:",inline"`
	// TLS and SASL shadow the spec's Secret-referencing fields.
	TLS  *fileTLS       `json:"tls"`
	SASL *fileKafkaSASL `json:"sasl"`
}

// fileTLS is kafka.tls, mailbox.tls or database.tls of a config file.
type fileTLS struct {
	// CA, Cert and Key are PEM text; each may be empty.
	CA         string `json:"ca"`
	Cert       string `json:"cert"`
	Key        string `json:"key"`
	ServerName string `json:"serverName"`
	// Mode is mailbox.tls.mode or database.tls.mode (verify, unverified,
	// disable).
	Mode v1alpha1.TLSMode `json:"mode"`
}

type fileKafkaSASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// Load reads, defaults and validates a --config file.
func Load(path string) (*Feed, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("config %s: %d bytes is more than the %d a config file may have", path, info.Size(), MaxFileBytes)
	}
	data, err := os.ReadFile(path) //nolint:gosec // reading the operator's own config file is the point
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	feed, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return feed, nil
}

// Parse decodes a --config document strictly (unknown or duplicate fields
// are errors that name the field), applies defaults and validates.
func Parse(data []byte) (*Feed, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %s", oneLine(err.Error()))
	}
	if strings.TrimSpace(string(js)) == "null" {
		return nil, errors.New("empty document")
	}
	var fs fileSpec
	strict, err := kjson.UnmarshalStrict(js, &fs, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, errors.New(describeDecodeError(js, err))
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	spec, secrets, errs := fs.resolve()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	SetDefaults(&spec)
	restoreWrittenZeros(js, &spec)
	loc, errs := ValidateSpec(&spec, nil)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &Feed{Spec: spec, Location: loc, Secrets: secrets}, nil
}

// resolve splits the file into the spec and the inline credentials.
func (fs *fileSpec) resolve() (v1alpha1.FlightFeedSpec, Secrets, field.ErrorList) {
	var errs field.ErrorList
	spec := v1alpha1.FlightFeedSpec{
		Airport:   fs.Airport,
		Mailbox:   fs.Mailbox.MailboxSpec,
		Database:  fs.Database.DatabaseSpec,
		Kafka:     fs.Kafka.KafkaSpec,
		Requests:  fs.Requests,
		Retention: fs.Retention,
		History:   fs.History,
		Pump:      fs.Pump,
	}
	secrets := Secrets{MailboxDSN: fs.Mailbox.DSN, DatabaseDSN: fs.Database.DSN, ReadDatabaseDSN: fs.Database.ReadDSN}
	spec.Database.ReadDSNSecretRef = nil

	inlineOnly := "a config file gives the credential inline; Secret references belong to the FlightFeed resource"
	if fs.Mailbox.DSNSecretRef != (v1alpha1.SecretKeyRef{}) {
		errs = append(errs, field.Forbidden(field.NewPath("mailbox", "dsnSecretRef"), inlineOnly+" (use mailbox.dsn)"))
	}
	if fs.Database.DSNSecretRef != (v1alpha1.SecretKeyRef{}) {
		errs = append(errs, field.Forbidden(field.NewPath("database", "dsnSecretRef"), inlineOnly+" (use database.dsn)"))
	}
	if fs.Database.ReadDSNSecretRef != nil {
		errs = append(errs, field.Forbidden(field.NewPath("database", "readDsnSecretRef"), inlineOnly+" (use database.readDsn)"))
	}
	if fs.Database.ReadDSN != "" {
		if err := CheckDatabaseDSN(fs.Database.ReadDSN); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("database", "readDsn"), RedactDSN(fs.Database.ReadDSN), err.Error()))
		}
	}
	if strings.TrimSpace(fs.Mailbox.DSN) == "" {
		errs = append(errs, field.Required(field.NewPath("mailbox", "dsn"), `the mailbox DSN, e.g. "root@tcp(127.0.0.1:3306)/mbx"`))
	} else if err := CheckMailboxDSN(fs.Mailbox.DSN, fs.Mailbox.TLS.spec()); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("mailbox", "dsn"), RedactDSN(fs.Mailbox.DSN), err.Error()))
	}
	if strings.TrimSpace(fs.Database.DSN) == "" {
		errs = append(errs, field.Required(field.NewPath("database", "dsn"), `the database DSN, e.g. "postgres://postgres@127.0.0.1:5432/ff?sslmode=disable"`))
	} else if err := CheckDatabaseDSN(fs.Database.DSN); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("database", "dsn"), RedactDSN(fs.Database.DSN), err.Error()))
	}
	if t := fs.Kafka.TLS; t != nil {
		spec.Kafka.TLS = &v1alpha1.KafkaTLS{ServerName: t.ServerName}
		secrets.Kafka.CA, secrets.Kafka.Cert, secrets.Kafka.Key = []byte(t.CA), []byte(t.Cert), []byte(t.Key)
		if (t.Cert == "") != (t.Key == "") {
			errs = append(errs, field.Invalid(field.NewPath("kafka", "tls"), "", "cert and key must be given together"))
		}
		if t.Mode != "" {
			errs = append(errs, field.Forbidden(field.NewPath("kafka", "tls", "mode"), "kafka.tls is TLS to the brokers; leave kafka.tls out for plain text"))
		}
	}
	var tlsErrs field.ErrorList
	spec.Mailbox.TLS, secrets.MailboxTLS, tlsErrs = fs.Mailbox.TLS.resolve(field.NewPath("mailbox", "tls"))
	errs = append(errs, tlsErrs...)
	spec.Database.TLS, secrets.DatabaseTLS, tlsErrs = fs.Database.TLS.resolve(field.NewPath("database", "tls"))
	errs = append(errs, tlsErrs...)
	for _, p := range PlaintextOf(&spec, secrets) {
		if err := p.Err(); err != nil {
			errs = append(errs, field.Invalid(plaintextField(p.Dependency), RedactDSN(plaintextDSN(p.Dependency, secrets)), err.Error()))
		}
	}
	for _, u := range UnverifiedOf(&spec, secrets) {
		// The mailbox's tls=skip-verify was named by CheckMailboxDSN.
		if err := u.Err(); err != nil && u.Dependency != "mailbox" {
			errs = append(errs, field.Invalid(plaintextField(u.Dependency), RedactDSN(plaintextDSN(u.Dependency, secrets)), err.Error()))
		}
	}
	if s := fs.Kafka.SASL; s != nil {
		spec.Kafka.SASL = &v1alpha1.KafkaSASL{Mechanism: s.Mechanism}
		secrets.Kafka.Username, secrets.Kafka.Password = s.Username, s.Password
		if s.Username == "" {
			errs = append(errs, field.Required(field.NewPath("kafka", "sasl", "username"), ""))
		}
		if s.Password == "" {
			errs = append(errs, field.Required(field.NewPath("kafka", "sasl", "password"), ""))
		}
	}
	return spec, secrets, errs
}

// resolve splits a server's TLS into the spec and the material, checking
// that the material makes a TLS configuration.
func (t *fileTLS) resolve(path *field.Path) (*v1alpha1.ServerTLS, TLSMaterial, field.ErrorList) {
	if t == nil {
		return nil, TLSMaterial{}, nil
	}
	spec := &v1alpha1.ServerTLS{ServerName: t.ServerName, Mode: t.Mode}
	m := TLSMaterial{CA: []byte(t.CA), Cert: []byte(t.Cert), Key: []byte(t.Key)}
	if t.Mode == v1alpha1.TLSDisable && (t.CA != "" || t.Cert != "" || t.Key != "") {
		return nil, TLSMaterial{}, field.ErrorList{field.Invalid(path.Child("mode"), string(t.Mode),
			"disable (plain text) takes no ca, cert or key: remove them, or drop mode to verify TLS")}
	}
	if t.Mode == v1alpha1.TLSUnverified && (t.CA != "" || t.Cert != "" || t.Key != "") {
		return nil, TLSMaterial{}, field.ErrorList{field.Invalid(path.Child("mode"), string(t.Mode),
			"unverified (no certificate check, as the DSN says) takes no ca, cert or key: remove them, or drop mode to verify TLS")}
	}
	if _, err := ClientTLS(spec, m); err != nil {
		return nil, TLSMaterial{}, field.ErrorList{field.Invalid(path, "", err.Error())}
	}
	return spec, m, nil
}

// spec is the mode and server name of a file's tls (the material left
// out), nil when absent: what the DSN checks need to know.
func (t *fileTLS) spec() *v1alpha1.ServerTLS {
	if t == nil {
		return nil
	}
	return &v1alpha1.ServerTLS{Mode: t.Mode, ServerName: t.ServerName}
}

// plaintextField is the config file's field of a dependency's DSN.
func plaintextField(dependency string) *field.Path {
	switch dependency {
	case "mailbox":
		return field.NewPath("mailbox", "dsn")
	case "read database":
		return field.NewPath("database", "readDsn")
	default:
		return field.NewPath("database", "dsn")
	}
}

// plaintextDSN is the DSN of a dependency.
func plaintextDSN(dependency string, s Secrets) string {
	switch dependency {
	case "mailbox":
		return s.MailboxDSN
	case "read database":
		return s.ReadDatabaseDSN
	default:
		return s.DatabaseDSN
	}
}

// oneLine folds a multi-line parser message so every error is one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
