package config

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// TransactionalID is the Kafka transactional.id of the feed's producer:
// "<prefix>.<namespace>.<name>" for a FlightFeed resource. A --config file
// names no resource; its feed is identified by the state database that
// holds its fencing epoch, "<prefix>.<host>:<port>/<database>", so two
// `flightfeed pump` processes of one feed fence each other at the broker
// and two feeds never do. A feed run both ways at once (a file and a
// resource on one database) gets two ids: the database epoch still fences
// its writes, the broker does not.
func (f *Feed) TransactionalID() (string, error) {
	prefix := f.Spec.Kafka.TransactionalIDPrefix
	if prefix == "" {
		return "", errors.New("no transactional id prefix (the feed was not defaulted by package config)")
	}
	if f.Name != "" {
		return prefix + "." + f.Namespace + "." + f.Name, nil
	}
	cfg, err := pgconn.ParseConfigWithOptions(f.Secrets.DatabaseDSN, DatabaseParseOptions())
	if err != nil {
		return "", fmt.Errorf("transactional id from the database DSN %s: %w", RedactDSN(f.Secrets.DatabaseDSN), RedactError(err, f.Secrets.DatabaseDSN))
	}
	return prefix + "." + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database, nil
}

// TransactionsOn reports whether the feed publishes through Kafka
// transactions (kafka.transactions, default true).
func (f *Feed) TransactionsOn() bool {
	t := f.Spec.Kafka.Transactions
	return t == nil || *t
}

// AutoMigrateOn reports whether the pump applies pending migrations when it
// starts (database.autoMigrate, default true).
func (f *Feed) AutoMigrateOn() bool {
	a := f.Spec.Database.AutoMigrate
	return a == nil || *a
}
