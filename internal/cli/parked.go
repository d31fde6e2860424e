package cli

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newParkedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "parked (--feed [NS/]NAME [--service-account SA | --token-file F] | --config F) [-o table|json] [--redeliver IDS|all]",
		Short: "List outbox events Kafka refused for good (PARKED); re-deliver them once the cause is fixed",
		Long: `parked lists the outbox events the dispatcher parked because the broker
refused their record for good (MESSAGE_TOO_LARGE, INVALID_RECORD, …), oldest
first: event id, kind (KAFKA_SCHD state or KAFKA_MSG notice), event, flight,
state version, operation day, the mailbox row that made it, its size, attempts,
when it was parked and the broker's error. A parked state is superseded by the
next version of its flight once that is delivered.

--redeliver makes parked events PENDING again once their cause is fixed (the
topic accepts larger records, say): a comma-separated list of event ids, or
"all". The running pump's dispatcher sends them with its next pass; an event
refused again is parked again. -o json prints one JSON object per line.

With --feed it asks the feed's read API through the API server's service
proxy (get on services/proxy of <NAME>-pump, create too for --redeliver;
the token's user needs get flightfeeds/messages, and create
flightfeeds/replays for --redeliver). With --config it works on the
database directly.`,
		Example: `  flightfeed parked --feed airport-pek/pek --service-account ops
  flightfeed parked --feed airport-pek/pek --service-account ops --redeliver 41,42
  flightfeed parked --config pek.yaml --redeliver all`,
		Args: cobra.NoArgs,
	}
	source := opsSource(cmd)
	limit := cmd.Flags().Int("limit", 200, "list at most this many events (0: all)")
	output := cmd.Flags().StringP("output", "o", "table", "table or json (one object per line)")
	redeliver := cmd.Flags().String("redeliver", "", `make these parked events PENDING again: event ids, comma-separated, or "all"`)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *limit < 0 {
			return usageError{fmt.Errorf("--limit %d: must be 0 or more", *limit)}
		}
		if *output != "table" && *output != "json" {
			return usageError{fmt.Errorf("-o %q: must be table or json", *output)}
		}
		ids, all, err := parseRedeliver(*redeliver)
		if err != nil {
			return usageError{err}
		}
		b, err := source(cmd.Context())
		if err != nil {
			return err
		}
		defer b.Close()
		w := bufio.NewWriter(cmd.OutOrStdout())
		if all || len(ids) > 0 {
			return redeliverParked(cmd.Context(), b, w, ids)
		}
		parked, err := b.Parked(cmd.Context(), *limit)
		if err != nil {
			return err
		}
		if *output == "json" {
			return writeJSONLines(w, parked)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tEVENT\tFLID\tVERSION\tDAY\tMSG_ID\tBYTES\tATTEMPTS\tPARKED\tERROR")
		for _, p := range parked {
			day := p.OperationDay
			if day == "" {
				day = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", p.ID, p.Kind, p.Event, p.FLID, p.StateVersion, day,
				p.MessageID, p.Bytes, p.Attempts, p.ParkedAt.In(b.Location()).Format("2006-01-02 15:04:05"), oneLine(p.LastError, 120))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return flush(w)
	}
	return cmd
}

// parseRedeliver reads --redeliver: "all", or event ids.
func parseRedeliver(s string) (ids []int64, all bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, false, nil
	}
	if s == "all" {
		return nil, true, nil
	}
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || id <= 0 {
			return nil, false, fmt.Errorf(`--redeliver %q: must be event ids (comma-separated) or "all"`, s)
		}
		ids = append(ids, id)
	}
	return ids, false, nil
}

// redeliverParked makes the events PENDING again (every parked one when
// ids is empty) and says which; ids that are not parked are named.
func redeliverParked(ctx context.Context, b opsBackend, w *bufio.Writer, ids []int64) error {
	done, err := b.Redeliver(ctx, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d parked event(s) are PENDING again; the pump's dispatcher sends them with its next pass\n", len(done))
	back := map[int64]bool{}
	for _, id := range done {
		back[id] = true
	}
	var missing []string
	for _, id := range ids {
		if !back[id] {
			missing = append(missing, strconv.FormatInt(id, 10))
		}
	}
	if err := flush(w); err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("not parked (delivered, superseded or unknown): event %s", strings.Join(missing, ", "))
	}
	return nil
}
