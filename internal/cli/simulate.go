package cli

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/mailbox"
	"github.com/flightfeed/flightfeed/internal/simulate"
)

var rqfdStart = regexp.MustCompile(`<STDB>(\d{2}[A-Za-z]{3}\d{2})\d{4}</STDB>`)

func newSimulateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "simulate --config F",
		Short: "Write a realistic SIS message stream into the mailbox (plays the AODB)",
		Long: `simulate plays the AODB side of the mailbox: it answers the full-day requests
FlightFeed left in the outbound table with a RESP schedule of the requested day,
then writes the day's traffic — the DNLD window push, a FLOP of every mapped kind,
an ADFT ad-hoc flight, an FDEL — and, with --malformed N, N broken messages.`,
		Args: cobra.NoArgs,
	}
	load := configFlag(cmd)
	day := cmd.Flags().String("day", "", "operation day of the traffic (YYYY-MM-DD; default today, airport-local)")
	flights := cmd.Flags().Int("flights", 20, "flights on the day")
	malformed := cmd.Flags().Int("malformed", 0, "broken messages to add")
	seed := cmd.Flags().Uint64("seed", 1, "random seed")
	createMailbox := cmd.Flags().Bool("create-mailbox", false, "create the default CMINMSGS/COUTMSGS tables first (dev and demo only)")
	answer := cmd.Flags().Bool("answer-requests", true, "answer pending RQFD requests with a RESP of the requested day")
	traffic := cmd.Flags().Bool("traffic", true, "write the day's traffic (window push, FLOPs, ADFT, FDEL, malformed)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		feed, err := load(cmd.Context())
		if err != nil {
			return err
		}
		if *flights < 1 || *flights > 9999 {
			return usageError{fmt.Errorf("--flights %d: must be 1 to 9999", *flights)}
		}
		if *malformed < 0 {
			return usageError{fmt.Errorf("--malformed %d: must not be negative", *malformed)}
		}
		now := time.Now()
		if *day == "" {
			*day = now.In(feed.Location).Format(time.DateOnly)
		} else if _, err := time.Parse(time.DateOnly, *day); err != nil {
			return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
		}
		ctx := cmd.Context()
		if *createMailbox {
			if err := createTables(ctx, feed); err != nil {
				return err
			}
		}
		mb, err := mailbox.OpenFeed(ctx, feed)
		if err != nil {
			return err
		}
		defer func() { _ = mb.Close() }()
		opts := simulate.Options{Day: *day, Flights: *flights, Malformed: *malformed, Seed: *seed,
			FirstSeqn: int(now.Unix()%900000) + 1, Location: feed.Location}
		var msgs []simulate.Message
		var days []string // what the messages written are about, in order
		if *answer {
			taken, err := mb.TakeOutbound(ctx, now)
			if err != nil {
				return err
			}
			for _, o := range taken {
				m := rqfdStart.FindStringSubmatch(o.Body)
				if m == nil {
					continue
				}
				d, err := time.ParseInLocation("02Jan06", m[1], feed.Location)
				if err != nil {
					continue
				}
				answerOpts := opts
				answerOpts.Day = d.Format(time.DateOnly)
				msgs = append(msgs, simulate.Response(answerOpts))
				days = appendNew(days, answerOpts.Day)
				fmt.Fprintf(cmd.OutOrStdout(), "answering request %d for %s\n", o.ID, answerOpts.Day)
			}
		}
		if *traffic {
			msgs = append(msgs, simulate.Stream(opts)...)
			days = appendNew(days, *day)
		}
		for i, m := range msgs {
			id, err := mb.Put(ctx, m.Body, now.Add(time.Duration(i)*time.Millisecond))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d %s\n", id, m.What)
		}
		if len(days) == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d messages\n", len(msgs))
			return nil
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %d messages for %s\n", len(msgs), strings.Join(days, ", "))
		return nil
	}
	return cmd
}

// appendNew appends day unless days holds it already.
func appendNew(days []string, day string) []string {
	if slices.Contains(days, day) {
		return days
	}
	return append(days, day)
}

// createTables applies the mailbox DDL of the default layout
// (mailbox.CreateTables). Its errors are scrubbed of the DSN's password
// like mailbox.Open's: the driver names what it parsed, and a malformed
// DSN puts the password there.
func createTables(ctx context.Context, feed *config.Feed) error {
	dsn := feed.Secrets.MailboxDSN
	conn, err := mailbox.FeedConnector(feed)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer func() { _ = db.Close() }()
	if err := mailbox.CreateTables(ctx, db); err != nil {
		return config.RedactError(err, dsn)
	}
	return nil
}
