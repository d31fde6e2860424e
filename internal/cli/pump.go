package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

func newPumpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pump --config F [--drain]",
		Short: "Run one feed's pump and Kafka dispatcher without Kubernetes",
		Long: `pump reads the feed's mailbox in FIFO order and applies every message to the
state database (migrating it first), writes results back to the mailbox, sends
the full-day requests and runs the lifecycle jobs; beside it the dispatcher
publishes the outbox to Kafka. It runs until SIGINT or SIGTERM; a transaction in
flight is rolled back, never half-applied. With --drain it exits 0 once every
mailbox row is processed and written back and every event is delivered; a
signal before that makes it exit 1 and say what was left. Events Kafka refused
for good (PARKED, see flightfeed parked) do not hold the drain: it ends, and
exits 1 with a one-line summary when any is parked.`,
		Args: cobra.NoArgs,
	}
	load := configFlag(cmd)
	drain := cmd.Flags().Bool("drain", false, "exit 0 once every mailbox row is processed and written back and the outbox is delivered")
	identity := cmd.Flags().String("identity", "", "name of this pump in the database's writer lock (default: host name)")
	cpuProfile := cmd.Flags().String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof; for `make bench`)")
	logFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		feed, err := load(cmd.Context())
		if err != nil {
			return err
		}
		if *cpuProfile != "" {
			stop, perr := startCPUProfile(*cpuProfile)
			if perr != nil {
				return perr
			}
			defer func() { err = errors.Join(err, stop()) }()
		}
		log := newLogger(cmd)
		id := *identity
		if id == "" {
			id = hostIdentity()
		}
		ctx := logr.NewContext(cmd.Context(), log)
		r, err := feedrun.Start(ctx, feed, feedrun.Options{Identity: id, Log: log})
		if err != nil {
			if se := (*store.SchemaError)(nil); errors.As(err, &se) {
				log.Error(err, "refusing to run the pump on this database schema", "schemaVersion", se.Current, "knownVersion", se.Known)
			}
			return err
		}
		defer r.Close()
		if *drain {
			// Drain returns nil both when drained and when a signal
			// stopped it; only the second leaves ctx cancelled.
			if err = r.Drain(ctx); err == nil && ctx.Err() != nil {
				err = interruptedDrain(ctx, feed)
			} else if err == nil {
				err = parkedAfterDrain(ctx, r)
			}
		} else {
			err = r.Run(ctx)
		}
		if errors.Is(err, pump.ErrFenced) {
			return fencedError(ctx, r, err)
		}
		return err
	}
	return cmd
}

// fencedError says that another pump took the feed over and, read from
// pipeline_lock, which one: two `flightfeed pump` processes on one
// database (two hosts given the same --config) are told apart by
// --identity, and the fenced one names the one that goes on.
func fencedError(ctx context.Context, r *feedrun.Runner, err error) error {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	h, herr := r.Holder(hctx)
	if herr != nil {
		return fmt.Errorf("another pump took over this feed's database (its identity could not be read: %w): %w", herr, err)
	}
	return fmt.Errorf("another pump took over this feed's database: pump %q holds it (epoch %d, taken %s); "+
		"run one pump per feed database, or stop that one: %w",
		h.Holder, h.Epoch, h.AcquiredAt.UTC().Format(time.RFC3339), err)
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path) //nolint:gosec // the operator's own output path
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// hostIdentity is the pod name under Kubernetes, else the host name.
func hostIdentity() string {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return host
	}
	return "flightfeed"
}
