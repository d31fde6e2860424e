package mailbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
)

// Open's errors never show the mailbox password, even from a DSN so
// malformed that the driver takes part of the password for the database
// name. Each DSN fails, whether or not a MySQL server runs locally.
func TestOpenErrorsNeverShowThePassword(t *testing.T) {
	const marker = "Zq9Marker"
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	for _, c := range []struct{ dsn, want string }{
		// No "/dbname": the last '/' is the password's, so the driver
		// takes "root:Zq9Marker" for the network and says so.
		{"root:" + marker + "/x@tcp(127.0.0.1:1)", "parse mailbox DSN ***@tcp(127.0.0.1:1): default addr for network 'root:***' unknown"},
		{"root:p@ss@" + marker + "@tcp(127.0.0.1:1)/mbx?timeout=2s", "connect to mailbox 127.0.0.1:1/mbx"},
		{"root:" + marker + "@tcp(127.0.0.1:1/mbx", "parse mailbox DSN ***@tcp(127.0.0.1:1/mbx"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := mailbox.Open(ctx, c.dsn, spec.Mailbox)
		cancel()
		if err == nil {
			_ = m.Close()
			t.Errorf("%s: opened", c.dsn)
			continue
		}
		if strings.Contains(err.Error(), marker[2:]) {
			t.Errorf("%s: error shows the password: %s", c.dsn, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.dsn, err, c.want)
		}
	}
}
