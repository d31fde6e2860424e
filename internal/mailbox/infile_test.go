package mailbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/testsupport/fakemysql"
)

// A rogue mailbox server that answers every query with LOAD DATA LOCAL
// INFILE naming a local file gets nothing of that file: a DSN asking for
// allowAllFiles is refused before anything is dialled, and a DSN without
// it connects, is asked, and sends only the empty end-of-file packet.
func TestRogueServerGetsNoLocalFile(t *testing.T) {
	const marker = "Zq9SecretTokenMarker"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("header "+marker+" trailer"), 0o600); err != nil {
		t.Fatal(err)
	}
	var spec v1alpha1.FlightFeedSpec
	config.SetDefaults(&spec)
	open := func(dsn string) (*mailbox.Mailbox, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return mailbox.Open(ctx, dsn, spec.Mailbox)
	}

	t.Run("allowAllFiles is refused before connecting", func(t *testing.T) {
		srv := fakemysql.Start(t, file, nil)
		for _, v := range []string{"true", "1"} {
			m, err := open("root:pw@tcp(" + srv.Addr() + ")/mbx?timeout=5s&allowAllFiles=" + v)
			if err == nil {
				_ = m.Close()
			}
			if st := srv.Stats(); bytes.Contains(st.AfterInfile, []byte(marker)) {
				t.Fatalf("allowAllFiles=%s: the server got the file: %q", v, st.AfterInfile)
			}
			if err == nil || !strings.Contains(err.Error(), "allowAllFiles=true is refused") {
				t.Fatalf("allowAllFiles=%s: got %v, want it refused", v, err)
			}
		}
		if st := srv.Stats(); st.Conns != 0 {
			t.Fatalf("the server was reached (%d connections)", st.Conns)
		}
	})

	t.Run("a plain DSN sends no file content", func(t *testing.T) {
		srv := fakemysql.Start(t, file, nil)
		m, err := open("root:pw@tcp(" + srv.Addr() + ")/mbx?timeout=5s")
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Close()
		st := srv.Stats()
		// Open asks the server two questions (the note column's character
		// set, max_allowed_packet): each was answered with the request.
		if st.InfileRequests == 0 || st.EmptyTerminators != st.InfileRequests {
			t.Fatalf("the fake's request was not exercised: %+v", st)
		}
		if bytes.Contains(st.AfterInfile, []byte(marker)) || len(st.AfterInfile) != 0 {
			t.Fatalf("the client sent %q after the LOCAL INFILE request", st.AfterInfile)
		}
	})
}
