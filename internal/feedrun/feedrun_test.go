package feedrun_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/mailbox/mailboxtest"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
	"github.com/flightfeed/flightfeed/internal/testsupport/kafkatest"
	"github.com/flightfeed/flightfeed/internal/testsupport/pgtest"
)

// A feed whose Kafka producer is fenced at the broker by a new leader —
// which takes the feed's epoch in the database, then initialises a producer
// of the feed's transactional id — stops as a whole, like a fenced pump:
// Run returns dispatch.ErrFenced, which is a store.ErrFenced too, and the
// events it could not publish stay pending for the new leader. Refused at
// the broker while the database still names it the leader (a transaction
// the broker aborted, or a stray producer of its id), it renews its client
// and goes on.
func TestFencedProducerStopsTheFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a feed against all three services")
	}
	mdsn, pdsn := mailboxtest.NewMailbox(t), pgtest.New(t)
	brokers := kafkatest.New(t, config.DefaultStateTopic, config.DefaultNoticeTopic)
	feed, err := config.Parse(fmt.Appendf(nil, `airport: {iata: PEK}
mailbox: {dsn: %q, pollInterval: 20ms}
database: {dsn: %q}
kafka: {brokers: [%q]}
requests: {disabled: true}
history: {disabled: true}
`, mdsn, pdsn, brokers[0]))
	if err != nil {
		t.Fatal(err)
	}
	mbox, err := sql.Open("mysql", mdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mbox.Close() })
	flop := func(seqn int, estt string) {
		t.Helper()
		body := fmt.Sprintf(`<MSG><META><SNDR>AODB</SNDR><SEQN>%d</SEQN><DDTM>20260909100000</DDTM><TYPE>FLOP</TYPE><STYP>ESTT</STYP></META><FLOP><FLID>4711</FLID><ESTT>%s</ESTT></FLOP></MSG>`, seqn, estt)
		mailboxtest.Write(t, mbox, mailbox.Inbound{Received: time.Now(), Body: body})
	}

	r, err := feedrun.Start(t.Context(), feed, feedrun.Options{Identity: "leader-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	st, err := store.Open(t.Context(), pdsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	flop(1, "09SEP260900")
	await.Eventually(t, "the first FLOP published", time.Minute, func() (bool, string) {
		pending, _, err := st.OutboxStats(t.Context())
		s := r.Status()
		return err == nil && pending == 0 && s.LastProcessedID == 1, fmt.Sprintf("pending %d (%v), last processed %d", pending, err, s.LastProcessedID)
	})

	// Another producer of the feed's transactional id takes over at the
	// broker, while the database still names this runner the leader: the
	// dispatcher renews its client (which fences the stray one) and goes on.
	id, err := feed.TransactionalID()
	if err != nil {
		t.Fatal(err)
	}
	producer := func() *kgo.Client {
		t.Helper()
		next, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(next.Close)
		if _, _, err := next.ProducerID(t.Context()); err != nil {
			t.Fatal(err)
		}
		return next
	}
	producer()
	flop(2, "09SEP260930")
	await.Eventually(t, "the second FLOP published after the client was renewed", time.Minute, func() (bool, string) {
		pending, _, err := st.OutboxStats(t.Context())
		s := r.Status()
		return err == nil && pending == 0 && s.LastProcessedID == 2 && s.KafkaClientsRenewed == 1,
			fmt.Sprintf("pending %d (%v), last processed %d, clients renewed %d", pending, err, s.LastProcessedID, s.KafkaClientsRenewed)
	})
	select {
	case err := <-done:
		t.Fatalf("the feed stopped although it still leads: %v", err)
	default:
	}

	// A new leader: the feed's epoch, then its producer.
	if _, err := st.TakeEpoch(t.Context(), "leader-b"); err != nil {
		t.Fatal(err)
	}
	producer()
	flop(3, "09SEP261000")
	select {
	case err := <-done:
		// The pump or the dispatcher, whichever meets the new epoch first.
		if !errors.Is(err, store.ErrFenced) {
			t.Fatalf("Run returned %v, want store.ErrFenced (dispatch.ErrFenced is one)", err)
		}
		t.Logf("the feed stopped: %v (dispatcher: %v)", err, errors.Is(err, dispatch.ErrFenced))
	case <-ctx.Done():
		t.Fatal("the feed ran on after a new leader took it")
	}
	var processed sql.NullTime
	if err := mbox.QueryRow(`SELECT CMINMSGS_DATE_PROCESSED FROM CMINMSGS WHERE CMINMSGS_ID = 3`).Scan(&processed); err != nil || processed.Valid {
		t.Fatalf("the third FLOP: processed %v (%v), want it left for the new leader", processed, err)
	}
}
