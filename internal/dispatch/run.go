package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/flightfeed/flightfeed/internal/backoff"
)

// Run delivers until ctx ends, then returns nil. With transactions it
// first initialises the feed's transactional producer, which fences the
// producer of any earlier leader at the broker (its open transaction is
// aborted). It runs passes at once (events left by an earlier process)
// until one finds nothing, and again whenever Notify is called or the
// periodic scan ticks. A failed pass — broker down, topic missing,
// authorization, database — is retried after a backoff with jitter,
// forever; it is reported in Status, never returned. Only a dispatcher
// stopped for good returns its error: fenced by a newer leader (ErrFenced)
// or a producer the broker refused for good (ErrProducerFailed).
func (d *Dispatcher) Run(ctx context.Context) error {
	log := d.log.WithValues("state_topic", d.topics.State, "notice_topic", d.topics.Notice, "epoch", d.opts.Epoch)
	log.Info("dispatcher started", "transactions", d.txn)
	defer log.Info("dispatcher stopped")
	if d.txn {
		if err := d.initProducer(ctx, log); err != nil {
			return err
		}
	}
	d.checkTopicLimits(ctx, log)
	scan := d.clock.NewTicker(d.opts.ScanInterval)
	defer scan.Stop()
	failures, renewals := 0, 0
	size := d.opts.BatchSize
	for ctx.Err() == nil {
		d.passMu.Lock()
		_, again, grow, err := d.pass(ctx, size)
		d.passMu.Unlock()
		size = d.passSize(size, grow)
		if ctx.Err() != nil {
			return nil
		}
		if stopped := d.stoppedErr(); stopped != nil {
			renewals++
			if d.renew(ctx, log, stopped, renewals) {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			return d.stoppedErr()
		}
		if err != nil {
			failures++
			wait := backoff.Delay(failures, d.opts.BackoffInitial, d.opts.BackoffMax, d.rand)
			log.Error(err, "delivery failed; retrying", "attempt", failures, "backoff", wait.String(),
				"reason", string(classify(err)))
			d.sleep(ctx, wait)
			continue
		}
		if failures > 0 {
			log.Info("delivery recovered", "after_failures", failures)
			failures = 0
		}
		renewals = 0
		if again {
			continue
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-scan.C():
		}
	}
	return nil
}

// epochRefused reports a broker's refusal of the producer's epoch: the
// broker bumped it, for a newer producer of the transactional id or after
// aborting a transaction that outlived its timeout.
func epochRefused(err error) bool {
	return kafkaFenced(err) || errors.Is(err, kerr.InvalidTxnState)
}

// renew goes on with a new client (Options.Renew) after the broker refused
// the producer's epoch while the database says this dispatcher still holds
// the feed's: no newer leader exists, so the broker aborted a transaction
// that outlived kafka's transaction timeout. The refused client is closed,
// the new one initialised (InitProducerID, which takes the transactional
// id back), and the database asked once more: a leader that took the feed
// meanwhile stops this dispatcher, and its own producer then fences this
// one at the broker. renewals counts the renewals since the last
// successful pass; they back off like failed passes. It reports whether
// the dispatcher goes on; when not, the stop stands.
func (d *Dispatcher) renew(ctx context.Context, log logr.Logger, stopped error, renewals int) bool {
	if d.opts.Renew == nil || !d.txn || !epochRefused(stopped) {
		return false
	}
	held, err := d.store.HoldsEpoch(ctx, d.opts.Epoch)
	if err != nil || !held {
		return false // a newer leader, or no way to tell: fenced
	}
	wait := backoff.Delay(renewals, d.opts.BackoffInitial, d.opts.BackoffMax, d.rand)
	log.Info("the broker refused the producer although this replica still leads the feed "+
		"(a pass outlived kafka's transaction timeout); renewing the Kafka client",
		"cause", stopped.Error(), "attempt", renewals, "backoff", wait.String())
	d.sleep(ctx, wait)
	if ctx.Err() != nil {
		return false
	}
	d.passMu.Lock()
	<-d.prev // the last pass has settled: nothing uses the old client
	old := d.client
	// Closed first: the hooks of a client (its metrics) leave with it
	// before the new client's arrive.
	old.Close()
	cl, err := d.opts.Renew()
	if err == nil && cl.OptValue(kgo.TransactionalID) != old.OptValue(kgo.TransactionalID) {
		cl.Close()
		err = errors.New("the renewed client has another transactional id")
	}
	if err != nil {
		d.passMu.Unlock()
		log.Error(err, "renew the Kafka client")
		return false
	}
	d.mu.Lock()
	d.client, d.watch, d.txnOpen = cl, watchOf(cl), false
	d.stopped, d.status.Stopped = nil, false
	d.status.ClientsRenewed++
	d.mu.Unlock()
	d.passMu.Unlock()
	if err := d.initProducer(ctx, log); err != nil {
		return false
	}
	if held, err := d.store.HoldsEpoch(ctx, d.opts.Epoch); err != nil || !held {
		d.stop(fmt.Errorf("%w: the feed's epoch moved while the Kafka client was renewed", ErrFenced))
		return false
	}
	return ctx.Err() == nil
}

// Client is the Kafka client in use: the one given to New, or the latest
// Run built with Options.Renew (it closed the ones it replaced). The caller
// closes it once Run has returned.
func (d *Dispatcher) Client() *kgo.Client {
	d.passMu.Lock()
	defer d.passMu.Unlock()
	return d.client
}

// initProducer initialises the transactional producer (InitProducerID),
// retrying while the broker is unreachable; a refusal for good stops the
// dispatcher. It returns nil when ctx ends.
func (d *Dispatcher) initProducer(ctx context.Context, log logr.Logger) error {
	for failures := 1; ; failures++ {
		// One attempt waits at most StallAfter, so an unreachable broker
		// is reported like a stalled pass.
		actx, cancel := context.WithTimeout(ctx, d.opts.StallAfter)
		id, epoch, err := d.client.ProducerID(actx)
		cancel()
		if err == nil {
			log.Info("transactional producer initialised", "producer_id", id, "producer_epoch", epoch)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		err = fmt.Errorf("initialise the transactional producer: %w", err)
		if gone := d.producerGone(err); gone != nil {
			d.stop(gone)
			return d.stoppedErr()
		}
		d.recordFailure(err)
		wait := backoff.Delay(failures, d.opts.BackoffInitial, d.opts.BackoffMax, d.rand)
		log.Error(err, "retrying", "attempt", failures, "backoff", wait.String(), "reason", string(classify(err)))
		d.sleep(ctx, wait)
	}
}

// sleep waits d or until ctx ends. Notify does not cut a backoff short: a
// failing broker is not retried at the pump's commit rate.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) {
	t := d.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// topicLimitTimeout bounds the describe of the topics' limits at start.
const topicLimitTimeout = 10 * time.Second

// checkTopicLimits compares kafka.maxRecordBytes with the topics'
// max.message.bytes as the broker describes them. A topic that accepts less
// lowers the pump's door to its limit (and says so in a warning and in
// Status.TopicLimit), so a record it would refuse is DEAD at the door
// rather than parked here. A broker that cannot describe them (no
// DescribeConfigs permission, an old broker) changes nothing.
func (d *Dispatcher) checkTopicLimits(ctx context.Context, log logr.Logger) {
	if d.opts.Door == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, topicLimitTimeout)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range []string{d.topics.State, d.topics.Notice} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = t
		r.ConfigNames = []string{"max.message.bytes"}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, d.client)
	if err != nil {
		log.Info("the topics' max.message.bytes could not be described; kafka.maxRecordBytes stands", "error", err.Error())
		return
	}
	configured := d.opts.Door.Max()
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			log.Info("a topic's max.message.bytes could not be described; kafka.maxRecordBytes stands",
				"topic", r.ResourceName, "error", err.Error())
			continue
		}
		for _, c := range r.Configs {
			if c.Name != "max.message.bytes" || c.Value == nil {
				continue
			}
			n, err := strconv.Atoi(*c.Value)
			if err != nil || n <= 0 {
				continue
			}
			if n < configured && d.opts.Door.Lower(n) {
				log.Error(nil, "a topic accepts smaller records than kafka.maxRecordBytes: the door refuses larger ones (STATE_TOO_LARGE)",
					"topic", r.ResourceName, "max_message_bytes", n, "max_record_bytes", configured)
				d.mu.Lock()
				d.status.TopicLimit = n
				d.mu.Unlock()
			}
		}
	}
}
