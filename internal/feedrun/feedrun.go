// Package feedrun runs one feed as a unit: the pump and, beside it, the
// Kafka dispatcher it wakes after every commit. `flightfeed pump` and the
// operator's per-feed runner both start feeds through it, so a feed runs
// the same with or without Kubernetes. It wires; it decides nothing.
package feedrun

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/dispatch"
	"github.com/flightfeed/flightfeed/internal/pump"
)

// Options configure a feed run.
type Options struct {
	// Identity names this process in the writer lock and logs.
	Identity string
	// Epoch is the fencing epoch taken on becoming leader (0: take one).
	Epoch int64
	Log   logr.Logger
	// Observer receives the pump's metrics (optional).
	Observer pump.Observer
	// KafkaOpts tune the producer (tests shorten timeouts).
	KafkaOpts []kgo.Opt
}

// Runner is one running feed.
type Runner struct {
	pump   *pump.Pump
	disp   *dispatch.Dispatcher
	client *kgo.Client
}

// Start connects a feed: it migrates and opens the database, opens the
// mailbox, builds the producer and the dispatcher. Nothing runs until Run.
func Start(ctx context.Context, feed *config.Feed, opts Options) (*Runner, error) {
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	r := &Runner{}
	// The pump wakes the dispatcher after commits; the dispatcher needs
	// the pump's store, so the hook is bound once both exist (before Run).
	var wake func()
	p, err := pump.New(ctx, pump.Options{Feed: feed, Identity: opts.Identity, Epoch: opts.Epoch,
		Log: opts.Log.WithName("pump"), Observer: opts.Observer, Notify: func() { wake() }})
	if err != nil {
		return nil, err
	}
	client, err := dispatch.NewClient(feed, opts.KafkaOpts...)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	d, err := dispatch.New(p.Store(), client, feed, dispatch.Options{Log: opts.Log.WithName("dispatch")})
	if err != nil {
		client.Close()
		p.Close()
		return nil, err
	}
	wake = d.Notify
	r.pump, r.disp, r.client = p, d, client
	return r, nil
}

// Run pumps and publishes until ctx ends (nil) or the pump is fenced
// (pump.ErrFenced).
func (r *Runner) Run(ctx context.Context) error {
	return r.run(ctx, func(ctx context.Context) error { return r.pump.Run(ctx) })
}

// Drain returns nil once every mailbox row is processed and written back
// and every outbox event is delivered (or superseded).
func (r *Runner) Drain(ctx context.Context) error {
	return r.run(ctx, func(ctx context.Context) error { return r.pump.Drain(ctx, r.disp.Idle) })
}

func (r *Runner) run(ctx context.Context, pumpRun func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = r.disp.Run(ctx) // returns nil when ctx ends; never on Kafka errors
	}()
	err := pumpRun(ctx)
	cancel()
	wg.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Status is the pump's status with the dispatcher's outbox figures.
func (r *Runner) Status() pump.Status {
	s := r.pump.Status()
	d := r.disp.Status()
	s.OutboxPending, s.OutboxOldestAge = d.Pending, d.OldestPendingAge
	s.KafkaReachable = !d.Failing && d.BrokerError == ""
	s.KafkaError = d.BrokerError
	if d.Failing && d.LastError != "" {
		s.KafkaError = d.LastError
	}
	return s
}

// DrainNotices returns the pump's notable outcomes since the last call.
func (r *Runner) DrainNotices() []pump.Notice { return r.pump.DrainNotices() }

// Close releases the connections (after Run returned).
func (r *Runner) Close() {
	r.client.Close()
	r.pump.Close()
}
