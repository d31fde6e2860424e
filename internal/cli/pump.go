package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/store"
)

func newPumpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pump (--feed NS/NAME | --config F [--drain])",
		Short: "Run one feed's pump: a pump pod of a FlightFeed, or one feed without Kubernetes",
		Long: `pump reads the feed's mailbox in FIFO order and applies every message to the
state database (migrating it first), writes results back to the mailbox, sends
the full-day requests and runs the lifecycle jobs; beside it the dispatcher
publishes the outbox to Kafka. A transaction in flight at SIGINT or SIGTERM is
rolled back, never half-applied.

With --feed NS/NAME it is one of the FlightFeed's pump pods (the Deployment
<name>-pump the operator makes runs it so): the pods elect a leader on the
feed's Lease; the leader runs the pump and writes the feed's status, the others
stand by (and are Ready). Every pod serves the feed's read API, metrics and
probes. It reads the FlightFeed and the Secrets it names with its own
ServiceAccount (or --kubeconfig).

With --config F it runs one feed without Kubernetes. With --drain it exits 0
once every mailbox row is processed and written back and every event is
delivered; a signal before that makes it exit 1 and say what was left. Events
Kafka refused for good (PARKED, see flightfeed parked) do not hold the drain:
it ends, and exits 1 with a one-line summary when any is parked.`,
		Example: `  # one of the pump pods of FlightFeed pek in namespace airports, from a workstation
  flightfeed pump --feed airports/pek --kubeconfig ~/.kube/config --metrics-secure=false

  # one feed without Kubernetes, until its mailbox is empty
  flightfeed pump --config pek.yaml --drain`,
		Args: cobra.NoArgs,
	}
	load := configFlag(cmd)
	f := cmd.Flags()
	feedRef := f.String("feed", "", "run as a pump pod of the FlightFeed NS/NAME (Kubernetes)")
	drain := f.Bool("drain", false, "with --config: exit 0 once every mailbox row is processed and written back and the outbox is delivered")
	identity := f.String("identity", "", "name of this pump in the feed's Lease and the database's writer lock (default: $POD_NAME, else the host name)")
	cpuProfile := f.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof; for `make bench`)")
	pod := newPodFlags(cmd)
	logFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) (err error) {
		applyPumpGCPercent(newLogger(cmd))
		if *feedRef != "" {
			if cmd.Flags().Changed("config") || *drain {
				return usageError{errors.New("--feed runs a pump pod of a FlightFeed; --config and --drain run one feed without Kubernetes: use one or the other")}
			}
			key, err := parseFeedRef(*feedRef)
			if err != nil {
				return usageError{err}
			}
			if *cpuProfile != "" {
				stop, perr := startCPUProfile(*cpuProfile)
				if perr != nil {
					return perr
				}
				defer func() { err = errors.Join(err, stop()) }()
			}
			return pod.run(cmd, key, *identity)
		}
		if changed := pod.changed(); changed != "" {
			return usageError{fmt.Errorf("--%s needs --feed NS/NAME", changed)}
		}
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
		// What the operator would show as warning conditions: allowed by an
		// opt-in in the file, never silent.
		for _, w := range config.WarningsOf(feed) {
			log.Info("configuration warning", "condition", string(w.Condition), "message", w.Message)
		}
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

// parseFeedRef reads NS/NAME.
func parseFeedRef(ref string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--feed %q: want NAMESPACE/NAME", ref)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
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
