package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
)

// replayPoll is how often replay looks for its request's outcome.
const replayPoll = 250 * time.Millisecond

func newReplayCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay NAME --id N --policy as-new|skip-conflicts [--service-account SA | --token-file F] [--timeout D]",
		Short: "Replay an archived DEAD message under an explicit policy (as-new or skip-conflicts)",
		Long: `replay asks the pump that holds the feed to apply a DEAD message's archived
raw text again, and waits for the outcome. --policy as-new runs it through
today's rules as if it had just arrived (after its cause was fixed: an FDEL
freed a FLID, a subtype became supported). --policy skip-conflicts is only
for a DEAD(PROTOCOL) SAME_FLID_ACROSS_OPERATION_DAYS snapshot a person has
confirmed: it is applied as that day's snapshot with the conflicting FLIDs
left out of the roster and untouched, each listed in the trace row; and for a
snapshot the decoder refused for a record's content (BAD_TIME, MISSING_FIELD,
DUPLICATE_FIELD, BAD_STRUCTURE, SEQ_ZERO_MIXED, BAD_SEQUENCE): it is applied
without the refused records, their flights untouched, each named by its FLID
and refusal in the outcome and the trace row.

The command only records the request (there is one writer); the pump
applies it between batches. It refuses at once a message that is not DEAD,
was replayed already or has no archived raw text. It exits non-zero when the
request is refused, the replay's result is DEAD, or --timeout passes first
(the request then stays pending and the pump still applies it).

The request goes to the feed's read API through the API server's service
proxy (get and create on services/proxy of <NAME>-pump; the token's user
needs create and get on flightfeeds/replays); any pump pod of the feed
records it and the leader applies it.`,
		Example: examples(m,
			"replay pek -n airport-pek --service-account ops --id 4711 --policy as-new",
			"replay pek -n airport-pek --token-file token --id 4712 --policy skip-conflicts --timeout 5m"),
		Args: cobra.MaximumNArgs(1),
	}
	if !m.plugin() {
		cmd.Use = "replay (NAME [--service-account SA | --token-file F] | --config F) --id N --policy as-new|skip-conflicts [--timeout D]"
		cmd.Long += `

With --config it is written to the database directly; --feed [NS/]NAME is
the same as NAME.`
		cmd.Example += "\n" + examples(m, "replay --config pek.yaml --id 4712 --policy skip-conflicts")
	} else {
		cmd.Args = cobra.ExactArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	id := cmd.Flags().Int64("id", 0, "mailbox row id of the DEAD message")
	policy := cmd.Flags().String("policy", "", "as-new or skip-conflicts")
	timeout := cmd.Flags().Duration("timeout", 2*time.Minute, "how long to wait for the pump's outcome")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *id <= 0 {
			return usageError{errors.New("--id N (a mailbox row id) is required")}
		}
		if *policy != store.ReplayAsNew && *policy != store.ReplaySkipConflicts {
			return usageError{fmt.Errorf("--policy %q: must be %s or %s", *policy, store.ReplayAsNew, store.ReplaySkipConflicts)}
		}
		if *timeout <= 0 {
			return usageError{fmt.Errorf("--timeout %s: must be positive", *timeout)}
		}
		b, err := source.ops(cmd.Context(), cmd, args)
		if err != nil {
			return err
		}
		defer b.Close()
		req, err := b.RequestReplay(cmd.Context(), *id, *policy)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "replay request %d recorded: message %d, %s; waiting for the pump\n", req.ID, req.MessageID, req.Policy)
		done, err := awaitReplay(cmd.Context(), b, req.ID, *timeout)
		if err != nil {
			return err
		}
		return printReplay(out, done)
	}
	return cmd
}

// awaitReplay polls request id until it leaves PENDING or timeout passes.
func awaitReplay(ctx context.Context, b opsBackend, id int64, timeout time.Duration) (store.ReplayRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(replayPoll)
	defer tick.Stop()
	for {
		req, err := b.Replay(ctx, id)
		if err == nil && req.State != store.ReplayPending {
			return req, nil
		}
		if err != nil && ctx.Err() == nil {
			return req, err
		}
		select {
		case <-ctx.Done():
			return req, fmt.Errorf("replay request %d: no outcome within %s (is the feed's pump running?); it stays pending and the pump applies it when it runs", id, timeout)
		case <-tick.C:
		}
	}
}

// printReplay prints a finished request and says whether it failed.
func printReplay(w io.Writer, req store.ReplayRequest) error {
	if req.State == store.ReplayRefused {
		return fmt.Errorf("replay request %d refused by the pump: %s", req.ID, req.Note)
	}
	line := fmt.Sprintf("message %d replayed %s: %s", req.MessageID, req.Policy, req.Result)
	if req.Note != "" {
		line += " (" + req.Note + ")"
	}
	fmt.Fprintln(w, line)
	if req.Result == store.StatusDead {
		return fmt.Errorf("replay request %d: the message is DEAD again: %s", req.ID, req.Note)
	}
	return nil
}
