package mailbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/testsupport/fakemysql"
	"github.com/flightfeed/flightfeed/internal/testsupport/heapwatch"
	"github.com/flightfeed/flightfeed/internal/testsupport/testpki"
)

// A mailbox server that sends one huge packet (it claims 1 GiB, in
// fragments of 16 MiB each announcing the next) fails that connection
// with an error naming the mailbox and its limit, and the pump's process
// holds a bounded amount meanwhile: the driver alone would reassemble the
// whole gigabyte. In plain text the packet headers are read as they pass
// (limit mailbox.maxMessageBytes + 1 MiB); under TLS, where they are not
// visible, the bytes of one answer are bounded (bound.go).
func TestHugePacketFailsTheMailboxConnectionInBoundedMemory(t *testing.T) {
	const claimed = 1 << 30
	pki := testpki.New(t, "mailbox CA", "mailbox.test")
	for _, c := range []struct {
		name string
		at   fakemysql.Stage
		tls  bool
		// maxMessage is mailbox.maxMessageBytes, 0 for the default (40 MiB).
		maxMessage int64
		want       string
		// heap bounds the growth of the heap's peak while the server floods.
		heap uint64
	}{
		// The default limit lets two full fragments (32 MiB) through before
		// the third crosses 41 MiB: the driver then holds them twice
		// (read buffer and reassembly).
		{"greeting, plain text, default limit", fakemysql.AtGreeting, false, 0,
			"mailbox: server sent a packet of more than 42991616 bytes (limit: mailbox.maxMessageBytes 41943040 + 1048576 bytes)", 96 << 20},
		// Below one fragment, the first header fails the read before the
		// driver reserves anything for it.
		{"query, plain text, 1 MiB limit", fakemysql.AtQuery, false, 1 << 20,
			"mailbox: server sent a packet of more than 2097152 bytes (limit: mailbox.maxMessageBytes 1048576 + 1048576 bytes)", 16 << 20},
		// Under TLS the driver reserves a fragment (16 MiB) on reading its
		// header; the answer is cut once it passes the larger of
		// maxMessageBytes and maxBatchBytes (16 MiB) plus margins.
		{"query, TLS, 1 MiB limit", fakemysql.AtQuery, true, 1 << 20,
			"mailbox: server sent more than 18599936 bytes in answer to one command", 64 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var serverTLS = pki.ServerTLS(t)
			if !c.tls {
				serverTLS = nil
			}
			srv := fakemysql.Start(t, "/nonexistent", serverTLS, fakemysql.Flood(claimed, c.at))
			feed := &config.Feed{}
			config.SetDefaults(&feed.Spec)
			if c.maxMessage > 0 {
				feed.Spec.Mailbox.MaxMessageBytes = c.maxMessage
			}
			feed.Secrets.MailboxDSN = "root:pw@tcp(" + srv.Addr() + ")/mbx?timeout=5s"
			if c.tls {
				feed.Spec.Mailbox.TLS = &v1alpha1.ServerTLS{ServerName: "mailbox.test"}
				feed.Secrets.MailboxTLS = config.TLSMaterial{CA: pki.CAPEM, Cert: pki.ClientCertPEM, Key: pki.ClientKeyPEM}
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			// A flood at the greeting fails Open. One at every query does
			// not: Open's own queries (character sets,
			// max_allowed_packet) fail quietly and it falls back to
			// defaults; the read that follows fails. Only the failing call
			// is measured.
			var m *mailbox.Mailbox
			var err error
			if c.at != fakemysql.AtGreeting {
				if m, err = mailbox.OpenFeed(ctx, feed); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = m.Close() })
			}
			before := srv.Stats().Flooded
			peak, total := heapwatch.Run(func() {
				if m == nil {
					m, err = mailbox.OpenFeed(ctx, feed)
					if err == nil {
						_ = m.Close()
						err = errors.New("opened")
					}
					return
				}
				_, _, err = m.Depth(ctx)
			})
			sent := srv.Stats().Flooded - before
			t.Logf("server claimed %d MiB, sent %.1f MiB; heap peak grew %.1f MiB, %.1f MiB allocated in all",
				claimed>>20, float64(sent)/(1<<20), float64(peak)/(1<<20), float64(total)/(1<<20))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			var bound *mailbox.BoundError
			if !errors.As(err, &bound) || !mailbox.IsUnavailable(err) {
				t.Errorf("error %v: want a *mailbox.BoundError, the mailbox unavailable (the pump retries with backoff)", err)
			}
			if peak > c.heap {
				t.Errorf("heap peak grew %d MiB, want under %d MiB", peak>>20, c.heap>>20)
			}
			if sent >= claimed {
				t.Errorf("the whole packet was read (%d bytes)", sent)
			}
		})
	}
}
