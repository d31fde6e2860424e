package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
)

func newDeadCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dead NAME [--service-account SA | --token-file F] [--since T] [--reason R] [--replayed] [-o json|yaml|wide]",
		Short: "List DEAD and FAILED messages with their reasons, newest first",
		Long: `dead lists the messages the pump gave up on (DEAD) or is still retrying
(FAILED), newest received first: mailbox row id, received time, SIS TYPE/STYP,
status, reason code, attempts and the note written back to the mailbox
(-o wide: whole, with when the message was last updated).
--since takes an RFC 3339 time or a duration back from now (24h); --reason a
reason code (RECS_MISMATCH, SAME_FLID_ACROSS_OPERATION_DAYS, …).

A message a replay took in (its replay SUCCEEDED or was SKIPPED) is no
longer listed: --replayed lists it too. The REPLAYED column ("replay" in
JSON: request_id, policy, result, reason, finished_at) says how its replay
ended and when; a replay that ended DEAD or FAILED stays listed with it.

For a snapshot refused for SAME_FLID_ACROSS_OPERATION_DAYS the CONFLICTS
column ("conflicts" in JSON, each {"flid","stored_day","message_day"})
names the FLIDs it gave another operation day than the one they are stored
under. Correct the data at the AODB, or once a person has confirmed the rest
of the snapshot, apply it without them: replay NAME --id N --policy
skip-conflicts.

The list comes from the feed's read API, through the API server's service
proxy: you need get on services/proxy of <NAME>-pump, and a token for the
feed (--service-account, --token-file or $FLIGHTFEED_TOKEN) whose user may
get flightfeeds/messages.`,
		Example: examples(m,
			"dead pek -n airport-pek --service-account ops --reason RECS_MISMATCH",
			"dead pek -n airport-pek --token-file token --since 24h -o wide"),
		Args: cobra.MaximumNArgs(1),
	}
	if !m.plugin() {
		cmd.Use = "dead (NAME [--service-account SA | --token-file F] | --config F) [--since T] [--reason R] [--replayed] [-o table|wide|json]"
		cmd.Long += `

With --config it comes from the database directly. On this binary -o json
prints one JSON object per line, and --feed [NS/]NAME is the same as NAME.`
		cmd.Example += "\n" + examples(m, "dead --config pek.yaml -o json")
	} else {
		cmd.Args = cobra.ExactArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	since := cmd.Flags().String("since", "", "only messages received since: an RFC 3339 time or a duration back from now (e.g. 24h)")
	reason := cmd.Flags().String("reason", "", "only messages with this reason code")
	limit := cmd.Flags().Int("limit", 200, "at most this many messages (0: all)")
	replayed := cmd.Flags().Bool("replayed", false, "also list the messages a replay took in (SUCCEEDED or SKIPPED)")
	output := tableOutput(cmd, m)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		filter := store.DeadFilter{Reason: strings.TrimSpace(*reason), Limit: *limit, Replayed: *replayed}
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
		format, err := output()
		if err != nil {
			return err
		}
		b, err := source.ops(cmd.Context(), cmd, args)
		if err != nil {
			return err
		}
		defer b.Close()
		dead, err := b.Dead(cmd.Context(), filter)
		if err != nil {
			return err
		}
		noteWidth := 120
		if format == outWide {
			noteWidth = 1 << 20
		}
		stamp := func(t time.Time) string { return t.In(b.Location()).Format("2006-01-02 15:04:05") }
		table := columns("ID", "RECEIVED", "TYPE", "STATUS", "REASON", "ATTEMPTS", "NOTE", "CONFLICTS", "REPLAYED", "UPDATED+")
		return printRows(cmd.OutOrStdout(), m, format, table, dead, func(d store.DeadMessage) []any {
			typ := d.Type + "/" + d.Styp
			if d.Type == "" {
				typ = "-"
			}
			return []any{d.MessageID, stamp(d.ReceivedAt), typ, d.Status, orDash(d.Reason), d.Attempts,
				orDash(oneLine(d.Note, noteWidth)), conflictsCell(d.Conflicts), replayCell(d.Replay, stamp), stamp(d.UpdatedAt)}
		})
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

// replayCell renders a message's replay as RESULT@TIME (airport-local,
// "SUCCEEDED@2026-09-09T10:15:00"), "-" when none ran.
func replayCell(o *store.ReplayOutcome, stamp func(time.Time) string) string {
	if o == nil {
		return "-"
	}
	return o.Result + "@" + strings.Replace(stamp(o.FinishedAt), " ", "T", 1)
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
