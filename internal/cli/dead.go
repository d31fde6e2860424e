package cli

import (
	"bufio"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
)

func newDeadCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dead (--feed [NS/]NAME [--service-account SA | --token-file F] | --config F) [--since T] [--reason R] [-o table|json]",
		Short: "List DEAD and FAILED messages with their reasons, newest first",
		Long: `dead lists the messages the pump gave up on (DEAD) or is still retrying
(FAILED), newest received first: mailbox row id, received time, SIS TYPE/STYP,
status, reason code, attempts and the note written back to the mailbox.
--since takes an RFC 3339 time or a duration back from now (24h); --reason a
reason code (RECS_MISMATCH, SAME_FLID_ACROSS_OPERATION_DAYS, …). -o json prints
one JSON object per line.

For a snapshot refused for SAME_FLID_ACROSS_OPERATION_DAYS the last column
(CONFLICTS; "conflicts" in JSON, each {"flid","stored_day","message_day"})
names the FLIDs it gave another operation day than the one they are stored
under. Correct the data at the AODB, or once a person has confirmed the rest
of the snapshot, apply it without them: flightfeed replay --id N --policy
skip-conflicts.

With --feed the list comes from the feed's read API, through the API
server's service proxy: you need get on services/proxy of <NAME>-pump, and
a token for the feed (--service-account, --token-file or $FLIGHTFEED_TOKEN)
whose user may get flightfeeds/messages. With --config it comes from the
database directly.`,
		Example: `  flightfeed dead --feed airport-pek/pek --service-account ops --reason RECS_MISMATCH
  flightfeed dead -n airport-pek --feed pek --token-file token --since 24h -o json
  flightfeed dead --config pek.yaml`,
		Args: cobra.NoArgs,
	}
	source := opsSource(cmd)
	since := cmd.Flags().String("since", "", "only messages received since: an RFC 3339 time or a duration back from now (e.g. 24h)")
	reason := cmd.Flags().String("reason", "", "only messages with this reason code")
	limit := cmd.Flags().Int("limit", 200, "at most this many messages (0: all)")
	output := cmd.Flags().StringP("output", "o", "table", "table or json (one object per line)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter := store.DeadFilter{Reason: strings.TrimSpace(*reason), Limit: *limit}
		if *limit < 0 {
			return usageError{fmt.Errorf("--limit %d: must be 0 or more", *limit)}
		}
		if *since != "" {
			t, err := parseSince(*since, time.Now())
			if err != nil {
				return usageError{err}
			}
			filter.Since = t
		}
		if *output != "table" && *output != "json" {
			return usageError{fmt.Errorf("-o %q: must be table or json", *output)}
		}
		b, err := source(cmd.Context())
		if err != nil {
			return err
		}
		defer b.Close()
		dead, err := b.Dead(cmd.Context(), filter)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		if *output == "json" {
			return writeJSONLines(w, dead)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRECEIVED\tTYPE\tSTATUS\tREASON\tATTEMPTS\tNOTE\tCONFLICTS")
		for _, d := range dead {
			typ := d.Type + "/" + d.Styp
			if d.Type == "" {
				typ = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.MessageID, d.ReceivedAt.In(b.Location()).Format("2006-01-02 15:04:05"),
				typ, d.Status, d.Reason, d.Attempts, oneLine(d.Note, 120), conflictsCell(d.Conflicts))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return flush(w)
	}
	return cmd
}

// conflictsShown is how many day conflicts one table cell names.
const conflictsShown = 3

// conflictsCell renders a day mismatch's FLIDs as FLID:STORED->MESSAGE
// ("2:2026-09-09->2026-09-10"), "-" when the message has none.
func conflictsCell(cs []store.DayConflict) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, 0, conflictsShown+1)
	for _, c := range cs[:min(len(cs), conflictsShown)] {
		parts = append(parts, c.FLID+":"+c.StoredDay+"->"+c.MessageDay)
	}
	if len(cs) > conflictsShown {
		parts = append(parts, fmt.Sprintf("+%d more (-o json)", len(cs)-conflictsShown))
	}
	return strings.Join(parts, ",")
}

// parseSince reads --since: an RFC 3339 time, or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: must be an RFC 3339 time or a positive duration (24h)", s)
	}
	return now.Add(-d), nil
}

// oneLine keeps a note on one table line, cut to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
