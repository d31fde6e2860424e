package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// requestKind is the one request kind the pump sends (pump.requestKind).
const requestKind = "RQFD"

func newRerequestCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rerequest NAME --day YYYY-MM-DD [--service-account SA | --token-file F]",
		Short: "Ask again for a day whose full-day request FAILED (its answers were refused the same way twice)",
		Long: `rerequest is the operator's answer to the alert FlightFeedRequestFailed: the
AODB answered a day's full-day request (RQFD) twice with a RESP refused the
same way (one straddling midnight, say: records of two operation days), so
the pump gave the request up (FAILED) and asks for that day no more. Once the
cause is fixed (the feed's airport.timeZone, the AODB's answer), rerequest
releases the day: the pump asks for it again within a minute, its refusals
counted from zero. It fails when the day is not held.

It asks the feed's read API through the API server's service proxy (create
on services/proxy of <NAME>-pump; the token's user needs create
flightfeeds/replays).`,
		Example: examples(m, "rerequest pek -n airport-pek --service-account ops --day 2026-09-09"),
		Args:    cobra.MaximumNArgs(1),
	}
	if !m.plugin() {
		cmd.Use = "rerequest (NAME [--service-account SA | --token-file F] | --config F) --day YYYY-MM-DD"
		cmd.Long += `

With --config it is written to the database directly; --feed [NS/]NAME is
the same as NAME.`
		cmd.Example += "\n" + examples(m, "rerequest --config pek.yaml --day 2026-09-09")
	} else {
		cmd.Args = cobra.ExactArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	day := cmd.Flags().String("day", "", "the operation day to ask for again (YYYY-MM-DD, airport-local)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *day == "" {
			return usageError{errors.New("--day YYYY-MM-DD is required")}
		}
		if _, err := time.Parse(time.DateOnly, *day); err != nil {
			return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
		}
		b, err := source.ops(cmd.Context(), cmd, args)
		if err != nil {
			return err
		}
		defer b.Close()
		n, err := b.Rerequest(cmd.Context(), *day)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s is not held: no FAILED full-day request of that day waits for a re-request", *day)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s released: the pump asks for it again within a minute\n", *day)
		return nil
	}
	return cmd
}
