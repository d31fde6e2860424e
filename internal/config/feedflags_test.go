package config_test

import (
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/config"
)

// The transactional id needs its prefix and, for a feed from a file, a
// database DSN the driver can read; the password never shows in the error.
func TestTransactionalIDRefusals(t *testing.T) {
	t.Parallel()
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	noPrefix := *feed
	noPrefix.Spec.Kafka.TransactionalIDPrefix = ""
	if id, err := noPrefix.TransactionalID(); err == nil || id != "" || !strings.Contains(err.Error(), "no transactional id prefix") {
		t.Fatalf("id %q, err %v: want the missing prefix refused", id, err)
	}
	badDSN := *feed
	badDSN.Spec.Kafka.TransactionalIDPrefix = "ff"
	badDSN.Secrets.DatabaseDSN = "postgres://u:" + dsnMarker + "@db:notaport/ff"
	id, err := badDSN.TransactionalID()
	if err == nil || id != "" || !strings.Contains(err.Error(), "transactional id from the database DSN") || strings.Contains(err.Error(), dsnMarker) {
		t.Fatalf("id %q, err %v: want the unreadable DSN refused, redacted", id, err)
	}
}

func TestAutoMigrateAndTransactionsDefaultOn(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		v    *bool
		want bool
	}{{nil, true}, {&yes, true}, {&no, false}} {
		var f config.Feed
		f.Spec.Database.AutoMigrate, f.Spec.Kafka.Transactions = c.v, c.v
		if f.AutoMigrateOn() != c.want || f.TransactionsOn() != c.want {
			t.Errorf("%v: autoMigrate %v, transactions %v; want %v", c.v, f.AutoMigrateOn(), f.TransactionsOn(), c.want)
		}
	}
}

// Only the conditions that hold are warned of: each warning has its
// message, and a feed with none holds no warning at all.
func TestWarningsOnlyOfConditionsThatHold(t *testing.T) {
	t.Parallel()
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	ws := config.WarningsOf(feed)
	if len(ws) >= 3 {
		t.Fatalf("the minimal feed warns of %d conditions: %+v", len(ws), ws)
	}
	for _, w := range ws {
		if w.Message == "" {
			t.Fatalf("a warning without a message: %+v", ws)
		}
	}
}
