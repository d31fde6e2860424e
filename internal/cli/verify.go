package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/store"
	"github.com/flightfeed/flightfeed/internal/verify"
	"github.com/flightfeed/flightfeed/internal/verify/rebuild"
)

// verify's exit codes beside 0 (identical), 1 (the verification could
// not run: another runs, a connection failed) and 2 (bad usage).
const (
	exitDiffers       = 3
	exitNotVerifiable = 4
)

// exitCodeError ends the command with code after printing its message.
type exitCodeError struct {
	code int
	err  error
}

func (e exitCodeError) Error() string { return e.err.Error() }
func (e exitCodeError) Unwrap() error { return e.err }

func newVerifyCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify NAME --day YYYY-MM-DD [--timeout D] [-o json|yaml]",
		Short: "Rebuild a day from the archived messages and compare it with what the feed serves",
		Long: `verify rebuilds one operation day from the archived raw messages (the evidence
archive, msg_archive), in their mailbox order, with the pump's own code, in a
scratch schema of the feed's database that it creates, migrates and drops;
the live tables are only read. Each flight of the day in current state and
the day's ledger are compared with the rebuild (the state version and the
update time, artefacts of processing, are not compared). The outcome is
kept as the day's last verification (its FlightFeedDay shows it, and
` + "`days -o wide`" + `).

Exit 0: "N flights, identical". Exit 3: each differing flight with its
differing fields (rebuilt -> served) and the first message whose result
differs. Exit 4: the day is NOT VERIFIABLE (the archive no longer holds a
message the feed processed, or an applied message's body was cut), never
reported as verified. Exit 1: the verification could not run (another
verification of the feed is running: one at a time per feed; a connection
failed; the timeout passed). -o json|yaml prints the outcome as a document.

The rebuild sends no request, writes to no mailbox and publishes nothing.
A full-day answer is attributed with the live request log as of each
message.

It runs in a pump pod of the feed NAME (or NS/NAME), through the API
server's service proxy: you need create on services/proxy of <NAME>-pump and
a token for the feed (--service-account, --token-file or $FLIGHTFEED_TOKEN)
whose user may create flightfeeds/verifications. Interrupting the command
(Ctrl-C) stops the verification in the pod.`,
		Example: examples(m, "verify pek --day 2026-09-09 -n airport-pek --service-account ops"),
		Args:    cobra.ExactArgs(1),
	}
	if m == binaryMode {
		cmd.Use = "verify (--config F | NAME [--service-account SA | --token-file F]) --day YYYY-MM-DD [--timeout D] [-o json|yaml]"
		cmd.Long += `

With --config F it runs here, on the feed's database directly, without
Kubernetes (its DSN's user must be allowed to create a schema).`
		cmd.Example = examples(m, "verify --config pek.yaml --day 2026-09-09") + "\n" + cmd.Example
		cmd.Args = cobra.MaximumNArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	day := cmd.Flags().String("day", "", "the operation day to verify (YYYY-MM-DD, airport-local)")
	timeout := cmd.Flags().Duration("timeout", readapi.DefaultVerifyTimeout, "give up the rebuild after this long (at most "+readapi.MaxVerifyTimeout.String()+" through the read API)")
	// The report as text by default (kubectl's default output is no -o).
	output := outputFlag(cmd, "", "output format: json or yaml (default: the report as text)", outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		if *day == "" {
			return usageError{errors.New("--day YYYY-MM-DD is required")}
		}
		if _, err := time.Parse(time.DateOnly, *day); err != nil {
			return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
		}
		if *timeout <= 0 {
			return usageError{fmt.Errorf("--timeout %s: must be above 0", *timeout)}
		}
		if source.configFile() == "" && !source.kube(args) {
			return usageError{errors.New("NAME (the FlightFeed) is required")}
		}
		src, err := openReadSource(cmd, source, args,
			func(_ *time.Location, s *store.Store) verifySource {
				return storeVerifier{s: s, path: source.configFile(), log: newLogger(cmd)}
			},
			func(a *feedAPI) verifySource { return a })
		if err != nil {
			return err
		}
		defer src.Close()
		res, err := src.Verify(cmd.Context(), *day, *timeout)
		if err != nil {
			return err
		}
		return printVerification(cmd.OutOrStdout(), format, res)
	}
	return cmd
}

// verifySource runs a verification: here on the database of --config, or
// in a pump pod through the read API.
type verifySource interface {
	Verify(ctx context.Context, day string, timeout time.Duration) (readapi.VerifyResult, error)
	Close()
}

// storeVerifier verifies on the feed's database directly (--config).
type storeVerifier struct {
	s    *store.Store
	path string
	log  logr.Logger
}

func (v storeVerifier) Close() { v.s.Close() }

func (v storeVerifier) Verify(ctx context.Context, day string, timeout time.Duration) (readapi.VerifyResult, error) {
	feed, err := config.Load(v.path)
	if err != nil {
		return readapi.VerifyResult{}, usageError{err}
	}
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return readapi.VerifyResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec, rep, err := rebuild.Day(ctx, rebuild.Options{Feed: feed, Live: v.s, DSN: feed.Secrets.DatabaseDSN,
		Conn: []store.ConnOption{store.WithTLS(dbTLS)}, Day: day, Log: v.log, RanBy: "cli"})
	var nv *verify.NotVerifiable
	switch {
	case errors.As(err, &nv) && rec.Outcome != "":
		return readapi.VerifyResult{Record: rec}, nil
	case err != nil:
		return readapi.VerifyResult{}, err
	}
	return readapi.VerifyResult{Record: rec, Report: &rep}, nil
}

// Verify asks a pump pod of the feed to verify day (POST verifications)
// and waits for its answer; ctx ending (Ctrl-C) cancels it there.
func (a *feedAPI) Verify(ctx context.Context, day string, timeout time.Duration) (readapi.VerifyResult, error) {
	var res readapi.VerifyResult
	err := a.call(ctx, "POST", "verifications", nil, readapi.VerifyRequest{Day: day, Timeout: timeout.String()}, &res)
	return res, err
}

// printVerification prints a verification's outcome and ends the command
// with its exit code: 0 identical, 3 differs, 4 not verifiable.
func printVerification(w io.Writer, format string, res readapi.VerifyResult) error {
	switch format {
	case outJSON, outYAML:
		doc, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		doc = append(doc, '\n')
		if format == outYAML {
			if doc, err = yaml.JSONToYAML(doc); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		if _, err := w.Write(doc); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	default:
		if res.Report != nil {
			printReport(w, *res.Report)
		}
	}
	switch res.Outcome {
	case verify.OutcomeIdentical:
		return nil
	case verify.OutcomeNotVerifiable:
		return exitCodeError{code: exitNotVerifiable, err: fmt.Errorf("%s NOT VERIFIABLE: %s", res.Day, res.Reason)}
	case verify.OutcomeDiffers:
		return exitCodeError{code: exitDiffers, err: fmt.Errorf("%s differs from its rebuild", res.Day)}
	}
	return fmt.Errorf("verification of %s: unknown outcome %q", res.Day, res.Outcome)
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
