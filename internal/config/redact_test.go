package config_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/config"
)

// marker is a password no message may ever show, whole or in part.
const marker = "Zq9Marker"

func TestRedactDSN(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://app:" + marker + "@db:5432/ff?sslmode=disable", "postgres://***@db:5432/ff?sslmode=disable"},
		{"postgresql://app:p@ss@" + marker + "@db/ff", "postgresql://***@db/ff"},
		{"postgres://app@db/ff", "postgres://***@db/ff"},
		{"postgres://db/ff?user=app&password=" + marker + "&sslmode=disable", "postgres://db/ff?user=app&password=***&sslmode=disable"},
		{"host=db user=app password=" + marker + " dbname=ff", "host=db user=app password=*** dbname=ff"},
		{"host=db password='" + marker + ` x\'y' dbname=ff`, "host=db password=*** dbname=ff"},
		{"host=db sslpassword=" + marker, "host=db sslpassword=***"},
		{"root:" + marker + "@tcp(127.0.0.1:3306)/mbx?parseTime=true", "***@tcp(127.0.0.1:3306)/mbx?parseTime=true"},
		{"root:" + marker + "://x@tcp(h)/mbx", "***@tcp(h)/mbx"},
		{"root@tcp(127.0.0.1:3306)/mbx", "***@tcp(127.0.0.1:3306)/mbx"},
		{"user:" + marker + "@kafka:9092", "***@kafka:9092"},
		{"127.0.0.1:9092", "127.0.0.1:9092"},
		{"", ""},
	} {
		if got := config.RedactDSN(c.in); got != c.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Drivers print what they parsed; a password split at an unescaped '@' or
// '/' turns up as a host or database name. RedactError removes it however
// it was split, and keeps the error's identity.
func TestRedactErrorRemovesEverySplitOfThePassword(t *testing.T) {
	for _, c := range []struct{ dsn, driverSays string }{
		{"postgres://postgres:p@ss@" + marker + "@127.0.0.1/ff", "lookup ss@" + marker + "@127.0.0.1: no such host"},
		{"postgres://postgres:5432/" + marker + "@db/ff", "failed to connect to `user=postgres database=" + marker + "@db/ff`"},
		{"postgres://postgres:" + marker + "@db/ff", "cannot parse `postgres://postgres:" + marker + "@db/ff`: invalid port"},
		{"postgres://postgres:a%40" + marker + "@db/ff", "password a@" + marker},
		{"host=db password='" + marker + "'", "bad: " + marker},
		{"root:" + marker + "@tcp(127.0.0.1:1)/mbx", "dsn root:" + marker + "@tcp"},
	} {
		err := config.RedactError(fmt.Errorf("driver: %s: %w", c.driverSays, context.DeadlineExceeded), c.dsn)
		if strings.Contains(err.Error(), marker[2:]) {
			t.Errorf("%s: %q shows the password", c.dsn, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: the cause is lost", c.dsn)
		}
	}
	// A user name is not secret, and a message without secrets is unchanged.
	plain := errors.New("failed to connect to `user=postgres database=ff`")
	if got := config.RedactError(plain, "postgres://postgres@db/ff"); got != plain { //nolint:errorlint // the very same error, not one wrapping it
		t.Errorf("a DSN without password changed the message: %q", got)
	}
	if config.RedactError(nil, "x") != nil {
		t.Error("nil is not nil")
	}
}

func TestCheckDatabaseDSN(t *testing.T) {
	for dsn, ambiguous := range map[string]bool{
		"postgres://postgres:p@ss@127.0.0.1:5432/ff":                    true,
		"postgresql://postgres:pa/ss@127.0.0.1:5432/ff":                 true,
		"postgres://postgres:p%40ss@127.0.0.1:5432/ff":                  false,
		"postgres://postgres:pa?ss#x@127.0.0.1:5432/ff":                 false,
		"postgres://h/ff?user=admin@server&password=x":                  false,
		"postgres://postgres@127.0.0.1:5432/ff":                         false,
		"host=127.0.0.1 password=p@ss@x dbname=ff":                      false,
		"postgres://postgres:secret@127.0.0.1/ff?application_name=a/b@": false,
	} {
		err := config.CheckDatabaseDSN(dsn)
		if (err != nil) != ambiguous {
			t.Errorf("CheckDatabaseDSN(%q) = %v, want ambiguous %v", dsn, err, ambiguous)
		}
	}
}

// Validation names a bad DSN or broker entry without its credentials.
func TestValidationMessagesHideCredentials(t *testing.T) {
	for name, edit := range map[string]func(string) string{
		"broker with credentials": func(s string) string {
			return strings.Replace(s, `"127.0.0.1:9092"`, `"user:`+marker+`@127.0.0.1:9092"`, 1)
		},
		"broker password without user": func(s string) string {
			return strings.Replace(s, `"127.0.0.1:9092"`, `"`+marker+`@127.0.0.1:9092"`, 1)
		},
		"broker with credentials and no port": func(s string) string {
			return strings.Replace(s, `"127.0.0.1:9092"`, `"user:`+marker+`@kafka"`, 1)
		},
		"database password with an unescaped @": func(s string) string {
			return strings.Replace(s, "postgres://postgres@", "postgres://postgres:p@ss@"+marker+"@", 1)
		},
		"database password with an unescaped /": func(s string) string {
			return strings.Replace(s, "postgres://postgres@", "postgres://postgres:p/"+marker+"@", 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(edit(minimal)))
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("message shows the password: %s", err)
			}
			if !strings.Contains(err.Error(), "***@") {
				t.Errorf("message does not show the redacted entry: %s", err)
			}
		})
	}
}
