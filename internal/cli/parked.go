package cli

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
)

func newParkedCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "parked NAME [--service-account SA | --token-file F] [-o json|yaml|wide] [--redeliver IDS|all]",
		Short: "List outbox events Kafka refused for good (PARKED); re-deliver them once the cause is fixed",
		Long: `parked lists the outbox events the dispatcher parked because the broker
refused their record for good (MESSAGE_TOO_LARGE, INVALID_RECORD, …), oldest
first: event id, kind (KAFKA_SCHD state or KAFKA_MSG notice), event, flight,
state version, operation day, the mailbox row that made it, its size, attempts,
when it was parked and the broker's error (-o wide: whole, with when the event
was made). A parked state is superseded by the next version of its flight
once that is delivered.

--redeliver makes parked events PENDING again once their cause is fixed (the
topic accepts larger records, say): a comma-separated list of event ids, or
"all". The running pump's dispatcher sends them with its next pass; an event
refused again is parked again.

It asks the feed's read API through the API server's service proxy (get on
services/proxy of <NAME>-pump, create too for --redeliver; the token's user
needs get flightfeeds/messages, and create flightfeeds/replays for
--redeliver).`,
		Example: examples(m,
			"parked pek -n airport-pek --service-account ops",
			"parked pek -n airport-pek --service-account ops --redeliver 41,42"),
		Args: cobra.MaximumNArgs(1),
	}
	if !m.plugin() {
		cmd.Use = "parked (NAME [--service-account SA | --token-file F] | --config F) [-o table|wide|json] [--redeliver IDS|all]"
		cmd.Long += `

With --config it works on the database directly. On this binary -o json
prints one JSON object per line, and --feed [NS/]NAME is the same as NAME.`
		cmd.Example += "\n" + examples(m, "parked --config pek.yaml --redeliver all")
	} else {
		cmd.Args = cobra.ExactArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	limit := cmd.Flags().Int("limit", 200, "list at most this many events (0: all)")
	output := tableOutput(cmd, m)
	redeliver := cmd.Flags().String("redeliver", "", `make these parked events PENDING again: event ids, comma-separated, or "all"`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *limit < 0 {
			return usageError{fmt.Errorf("--limit %d: must be 0 or more", *limit)}
		}
		format, err := output()
		if err != nil {
			return err
		}
		ids, all, err := parseRedeliver(*redeliver)
		if err != nil {
			return usageError{err}
		}
		b, err := source.ops(cmd.Context(), cmd, args)
		if err != nil {
			return err
		}
		defer b.Close()
		if all || len(ids) > 0 {
			return redeliverParked(cmd.Context(), b, bufio.NewWriter(cmd.OutOrStdout()), ids)
		}
		parked, err := b.Parked(cmd.Context(), *limit)
		if err != nil {
			return err
		}
		errWidth := 120
		if format == outWide {
			errWidth = 1 << 20
		}
		stamp := func(t time.Time) string { return t.In(b.Location()).Format("2006-01-02 15:04:05") }
		table := columns("ID", "KIND", "EVENT", "FLID", "VERSION", "DAY", "MSG_ID", "BYTES", "ATTEMPTS", "PARKED", "ERROR", "CREATED+")
		return printRows(cmd.OutOrStdout(), m, format, table, parked, func(p store.ParkedEvent) []any {
			return []any{p.ID, p.Kind, p.Event, p.FLID.String(), p.StateVersion, orDash(p.OperationDay),
				p.MessageID, p.Bytes, p.Attempts, stamp(p.ParkedAt), orDash(oneLine(p.LastError, errWidth)), stamp(p.CreatedAt)}
		})
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
