package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
	"github.com/flightfeed/flightfeed/internal/verify/rebuild"
)

// verify's exit codes beside 0 (identical).
const (
	exitDiffers       = 1
	exitNotVerifiable = 2
)

// exitCodeError ends the command with code after printing its message.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

func newVerifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify --config F --day YYYY-MM-DD [--timeout D]",
		Short: "Rebuild a day from the archived messages and compare it with what the feed serves",
		Long: `verify rebuilds one operation day from the archived raw messages (the evidence
archive, msg_archive), in their mailbox order, with the pump's own code, in a
scratch schema of the feed's database that it creates, migrates and drops;
the live tables are only read. Each flight of the day in current state and
the day's ledger are compared with the rebuild (the state version and the
update time, artefacts of processing, are not compared).

Exit 0: "N flights, identical". Exit 1: each differing flight with its
differing fields (rebuilt -> served) and the first message whose result
differs. Exit 2: the day is NOT VERIFIABLE (the archive no longer holds a
message the feed processed, or an applied message's body was cut), never
reported as verified.

The rebuild sends no request, writes to no mailbox and publishes nothing.
A full-day answer is attributed with the live request log as of each
message.`,
		Example: "  flightfeed verify --config pek.yaml --day 2026-09-09",
		Args:    cobra.NoArgs,
	}
	load := configFlag(cmd)
	day := cmd.Flags().String("day", "", "the operation day to verify (YYYY-MM-DD, airport-local)")
	timeout := cmd.Flags().Duration("timeout", 30*time.Minute, "give up the rebuild after this long")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *day == "" {
			return usageError{errors.New("--day YYYY-MM-DD is required")}
		}
		if _, err := time.Parse(time.DateOnly, *day); err != nil {
			return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
		}
		ctx := cmd.Context()
		feed, live, err := openFeedStore(ctx, load, openReadOnlyStore)
		if err != nil {
			return err
		}
		defer live.Close()
		dbTLS, err := feed.DatabaseTLS()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		rep, err := rebuild.Day(ctx, rebuild.Options{Feed: feed, Live: live, DSN: feed.Secrets.DatabaseDSN,
			Conn: []store.ConnOption{store.WithTLS(dbTLS)}, Day: *day, Log: newLogger(cmd)})
		var nv *verify.NotVerifiable
		if errors.As(err, &nv) {
			return exitCodeError{code: exitNotVerifiable, err: err}
		}
		if err != nil {
			return err
		}
		printReport(cmd.OutOrStdout(), rep)
		if !rep.Identical() {
			return exitCodeError{code: exitDiffers, err: fmt.Errorf("%s differs from its rebuild", *day)}
		}
		return nil
	}
	return cmd
}

func printReport(w io.Writer, rep verify.Report) {
	if rep.Identical() {
		fmt.Fprintf(w, "%s: %d flights, identical (%d messages replayed)\n", rep.Day, rep.Flights, rep.Messages)
		return
	}
	fmt.Fprintf(w, "%s: %d flights served, %d differ from the rebuild (%d messages replayed); values rebuilt -> served\n",
		rep.Day, rep.Flights, len(rep.Diffs), rep.Messages)
	for _, d := range rep.Diffs {
		fmt.Fprintf(w, "flight %d %s\n", d.FLID, d.Kind)
		for _, c := range d.Changes {
			fmt.Fprintf(w, "  %s %s %s -> %s\n", c.Tag, c.Op, shown(c.Old), shown(c.New))
		}
	}
	if l := rep.Ledger; l != nil {
		fmt.Fprintf(w, "ledger differs (%s): rebuilt %s; served %s\n", l.What, ledgerText(l.Rebuilt), ledgerText(l.Served))
	}
	if p := rep.Parting; p != nil {
		fmt.Fprintf(w, "first message where they part: %d rebuilt %s, served %s\n", p.Served.ID, resultText(p.Rebuilt), resultText(p.Served))
	} else {
		fmt.Fprintln(w, "no message parts: every replayed message has its served result, so the served state was changed outside the processing of archived messages")
	}
}

func shown(v []byte) string {
	if v == nil {
		return "(none)"
	}
	return string(v)
}

func ledgerText(l verify.Ledger) string {
	if !l.Present {
		return "no full-day snapshot"
	}
	ids := make([]string, len(l.Roster))
	for i, f := range l.Roster {
		ids[i] = fmt.Sprint(uint64(f))
	}
	return fmt.Sprintf("message %d, version %d, roster [%s]", l.LastMessageID, l.Version, strings.Join(ids, " "))
}

func resultText(r verify.Result) string {
	switch {
	case r.Status == "":
		return "not processed"
	case r.Reason == "":
		return r.Status
	}
	return r.Status + " (" + r.Reason + ")"
}
