package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/config"
)

// Exit codes: 0 success, 1 the command failed, 2 bad usage or configuration.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError marks an error caused by the command line or the config file.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Execute runs the flightfeed binary's command line and returns the
// process exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if isPluginName(os.Args[0]) {
		return notThePlugin(os.Stderr)
	}
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// ExecutePlugin runs the kubectl plugin's command line (its binary,
// cmd/kubectl-flightfeed, hands it kubectl's flags and printers) and
// returns the process exit code.
func ExecutePlugin(k Kubectl) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return runPluginCommand(ctx, k, os.Args[1:], os.Stdout, os.Stderr)
}

// PluginName is the name under which kubectl finds the plugin: with a
// kubectl-flightfeed binary on the PATH, kubectl runs `kubectl-flightfeed
// status ...` for `kubectl flightfeed status ...`.
const PluginName = "kubectl-flightfeed"

// pluginDisplayName is the command's name in help and usage as a plugin.
const pluginDisplayName = "kubectl flightfeed"

// isPluginName says whether argv0 names the plugin's binary.
func isPluginName(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == PluginName
}

// notThePlugin answers a flightfeed binary run under the plugin's name
// (a copy or symlink made for a release whose one binary was both): the
// plugin is a binary of its own now, and this one no longer carries it.
// Nothing runs, so nothing is done under a name that means something else.
func notThePlugin(stderr io.Writer) int {
	fmt.Fprintln(stderr, "flightfeed: this is the flightfeed binary, not the kubectl plugin: install kubectl-flightfeed"+
		" (make plugin, or kubectl krew install flightfeed) in its place; see docs/plugin.md")
	return exitUsage
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, NewRootCommand(), "flightfeed", args, stdout, stderr)
}

func runPluginCommand(ctx context.Context, k Kubectl, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, NewPluginCommand(k), pluginDisplayName, args, stdout, stderr)
}

// execute runs root, named name in help and usage, on args.
func execute(ctx context.Context, root *cobra.Command, name string, args []string, stdout, stderr io.Writer) int {
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// One line on stderr: operators grep logs, scripts read the exit code.
	fmt.Fprintln(stderr, "flightfeed:", strings.Join(strings.Fields(err.Error()), " "))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ce exitCodeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitFailed
}

// NewRootCommand builds the flightfeed command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "flightfeed",
		Short: "Ingest AODB SIS messages into authoritative flight state and publish it to Kafka",
		Long: `flightfeed reads an airport AODB's shared MySQL mailbox in FIFO order, keeps the
current state of every flight in PostgreSQL (one transaction per message) and
publishes full-state and change events to Kafka. It runs as a Kubernetes
operator (manager) or, for one feed without Kubernetes, as a pump.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Before every command: the Go runtime learns the container's
		// memory limit. (The MySQL driver's log is routed by the commands
		// that open a mailbox; see mysqlLogger.)
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			applyContainerMemoryLimit(newLogger(cmd))
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newManagerCommand(),
		newPumpCommand(),
		newMigrateCommand(),
		newExportCommand(binaryMode),
		newLedgerCommand(),
		newSimulateCommand(),
		newSelftestCommand(),
	)
	// The kubectl plugin's commands, here with the flightfeed binary's
	// compatibility flags (--config, --feed, -o table) and without
	// kubectl's own library (see Kubectl).
	root.AddCommand(userCommands(binaryMode)...)
	return root
}

// feedLoader returns the feed a command's --config names.
type feedLoader func(context.Context) (*config.Feed, error)

// configFlag registers the --config flag shared by the non-Kubernetes
// commands and returns a loader for it.
func configFlag(cmd *cobra.Command) feedLoader {
	path := cmd.Flags().String("config", "", "feed configuration file (YAML, the FlightFeed spec's shape with inline DSNs)")
	return func(context.Context) (*config.Feed, error) {
		if *path == "" {
			return nil, usageError{errors.New("--config is required")}
		}
		feed, err := config.Load(*path)
		if err != nil {
			return nil, usageError{err}
		}
		return feed, nil
	}
}
