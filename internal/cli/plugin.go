package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/buildinfo"
	"github.com/flightfeed/flightfeed/internal/flight"
)

// NewPluginCommand builds the kubectl plugin's command tree: only what a
// user of a running feed needs (no manager, pump, simulate, migrate, …),
// each command taking kubectl's flags and the feed as a positional NAME,
// and printing with kubectl's printers (k: package internal/cli/kubectl,
// which only the plugin's binary links).
func NewPluginCommand(k Kubectl) *cobra.Command {
	root := &cobra.Command{
		Use:   "flightfeed",
		Short: "Look at and operate FlightFeeds: status, operation days, DEAD and parked messages, replays, flights, reference data",
		Long: `kubectl flightfeed reads FlightFeeds and their FlightFeedDays from the API
server, and a feed's flights, reference data, DEAD and parked messages
through the feed's read API behind the API server's service proxy: it needs
Kubernetes RBAC and a token for the feed, never the feed's Secrets or a
route to its database.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// kubectl completes a plugin through kubectl_complete-flightfeed
		// (docs/plugin.md), which runs the hidden __complete command; a
		// completion command of its own would only be noise in the list.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(userCommands(pluginMode(k))...)
	return root
}

// userCommands are the commands both trees have, built for m.
func userCommands(m mode) []*cobra.Command {
	cmds := []*cobra.Command{
		newStatusCommand(m),
		newLogsCommand(m),
		newDaysCommand(m),
		newDeadCommand(m),
		newParkedCommand(m),
		newReplayCommand(m),
		newRerequestCommand(m),
		newGetCommand(m),
		newRefCommand(m),
		newHistoryCommand(m),
		newVerifyCommand(m),
		newReportCommand(m),
		newVersionCommand(m),
	}
	if m.plugin() {
		cmds = append(cmds, newExportCommand(m))
	}
	return cmds
}

func newDaysCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "days NAME [-o json|yaml|wide]",
		Short: "List a FlightFeed's operation days (its FlightFeedDays), days ascending",
		Long: `days lists the FlightFeedDays of the feed NAME (or NS/NAME): one per
operation day, the read-only mirror of the feed's snapshot ledger. VERSION
is the day's snapshot generation, FLIGHTS the size of its roster,
LAST-MESSAGE the mailbox row of its last full-day snapshot, COMMITTED how
long ago that committed. -o wide adds the day's last verification
(VERIFIED: IDENTICAL, DIFFERS or NOT_VERIFIABLE, and how long ago; see
verify) and the object's name.`,
		Example: examples(m,
			"days pek -n airport-pek",
			"days airport-pek/pek -o wide"),
		Args: cobra.ExactArgs(1),
	}
	cf := kubeFlags(cmd, m)
	cmd.ValidArgsFunction = completeFeedNames(cf)
	output := tableOutput(cmd, m)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		_, key, c, err := cf.feed(args[0])
		if err != nil {
			return err
		}
		var ff v1alpha1.FlightFeed
		if err := c.Get(cmd.Context(), key, &ff); err != nil {
			if apierrors.IsNotFound(err) {
				return usageError{fmt.Errorf("FlightFeed %s not found", key)}
			}
			return fmt.Errorf("read FlightFeed %s: %w", key, err)
		}
		var list v1alpha1.FlightFeedDayList
		if err := c.List(cmd.Context(), &list, client.InNamespace(key.Namespace), client.MatchingLabels{v1alpha1.LabelFeed: key.Name}); err != nil {
			return fmt.Errorf("list the FlightFeedDays of %s: %w", key, err)
		}
		days := make([]v1alpha1.FlightFeedDay, 0, len(list.Items))
		for _, d := range list.Items {
			// The label says which feed; the owner reference proves it (a
			// feed deleted and made again has a new UID).
			if metav1.IsControlledBy(&d, &ff) {
				d.APIVersion, d.Kind = v1alpha1.GroupVersion.String(), "FlightFeedDay"
				days = append(days, d)
			}
		}
		slices.SortFunc(days, func(a, b v1alpha1.FlightFeedDay) int { return cmp.Compare(a.Spec.Day, b.Spec.Day) })
		now := time.Now()
		ago := func(t *metav1.Time) string {
			if t == nil || t.IsZero() {
				return "-"
			}
			return duration.HumanDuration(now.Sub(t.Time))
		}
		table := columns("DAY", "VERSION", "FLIGHTS", "LAST-MESSAGE", "COMMITTED", "AGE", "VERIFIED+", "VERIFIED-AT+", "NAME+")
		return printRows(cmd.OutOrStdout(), m, format, table, days, func(d v1alpha1.FlightFeedDay) []any {
			verified, verifiedAt := "-", "-"
			if v := d.Status.Verification; v != nil {
				verified, verifiedAt = v.Outcome, ago(&v.FinishedAt)
			}
			return []any{d.Spec.Day, d.Status.Version, d.Status.Flights, d.Status.LastMessageID, ago(d.Status.LastCommitAt),
				ago(&d.CreationTimestamp), verified, verifiedAt, d.Name}
		})
	}
	return cmd
}

func newGetCommand(m mode) *cobra.Command {
	get := &cobra.Command{
		Use:   "get flight NAME FLID",
		Short: "Get one object of a FlightFeed: a flight's current state",
		Long:  `get reads one object of a feed from its read API; "get flight" one flight.`,
		Example: examples(m,
			"get flight pek 121112312 -n airport-pek --service-account ops"),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("name what to get: %s get flight NAME FLID", cmd.Root().DisplayName())}
		},
	}
	kubeFlags(get, m)
	get.AddCommand(newGetFlightCommand(m))
	return get
}

func newGetFlightCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "flight NAME FLID [-o json|yaml]",
		Aliases: []string{"flights"},
		Short:   "Print one flight's full current state (the KAFKA_SCHD document)",
		Long: `get flight prints the full current state of flight FLID of the feed NAME (or
NS/NAME): the canonical JSON document KAFKA_SCHD carries and export prints,
read in one consistent transaction by the feed's read API, through the API
server's service proxy (get on services/proxy of <NAME>-pump, a token whose
user may get flightfeeds/flights). -o yaml prints it as YAML.`,
		Example: examples(m,
			"get flight pek 121112312 -n airport-pek --service-account ops",
			"get flight airport-pek/pek 121112312 --token-file token -o yaml"),
		Args: cobra.ExactArgs(2),
	}
	source := addFeedSource(cmd, m, false)
	output := outputFlag(cmd, outJSON, "output format: json or yaml", outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		flid, err := flight.ParseFLID(args[1])
		if err != nil {
			return usageError{fmt.Errorf("FLID %q: %w", args[1], err)}
		}
		a, err := source.api(cmd.Context(), args[:1])
		if err != nil {
			return err
		}
		doc, err := a.Flight(cmd.Context(), flid.String())
		if err != nil {
			return err
		}
		out := append([]byte(doc), '\n')
		if format == outYAML {
			if out, err = yaml.JSONToYAML(doc); err != nil {
				return fmt.Errorf("flight %s: %w", flid, err)
			}
		}
		if _, err := cmd.OutOrStdout().Write(out); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	return cmd
}

func newVersionCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the binary's version, VCS revision and Go version",
		Long: `version prints the version, VCS revision and Go version the Go toolchain
recorded in this binary: -o json prints the labels of the
flightfeed_build_info metric a pump pod of the same build exposes, so the
two can be compared. It reads nothing from the cluster.`,
		Example: examples(m, "version", "version -o json"),
		Args:    cobra.NoArgs,
	}
	kubeFlags(cmd, m)
	output := outputFlag(cmd, "", "output format: json or yaml (default: one line)", outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		bi := buildinfo.Read()
		w := bufio.NewWriter(cmd.OutOrStdout())
		switch format {
		case outJSON:
			enc := json.NewEncoder(w)
			if err := enc.Encode(bi); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		case outYAML:
			b, err := yaml.Marshal(bi)
			if err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			_, _ = w.Write(b)
		default:
			fmt.Fprintf(w, "flightfeed %s (revision %s, %s)\n", bi.Version, bi.Revision, bi.GoVersion)
		}
		return flush(w)
	}
	return cmd
}
