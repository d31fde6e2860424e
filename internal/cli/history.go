package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/store"
)

// historyPageSize is how many changes `history` reads at once.
const historyPageSize = readapi.DefaultPageSize

// historySource is where `history` reads: the feed's database (--config)
// or its read API. Both answer the read API's page, so the two print
// alike.
type historySource interface {
	Location() *time.Location
	// FlightHistory reads up to limit changes of flid that f selects
	// (Day, Since) after cursor ("" from the oldest); the page's Cursor
	// continues it. A flight the feed does not know is errFlightNotFound.
	FlightHistory(ctx context.Context, flid flight.FLID, f store.HistoryFilter, cursor string) (readapi.HistoryPage, error)
	Close()
}

// errFlightNotFound is a flight the feed knows nothing of.
var errFlightNotFound = errors.New("flight not found")

func newHistoryCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history NAME FLID [--day D] [--since T] [--limit N] [-o json|yaml|wide]",
		Short: "Show a flight's history, message by message: what each message changed",
		Long: `history lists every message that gave flight FLID of the feed NAME (or
NS/NAME) a new state, oldest first: MSG_ID (the mailbox row), STYP, RECEIVED
(when the mailbox received it), COMMITTED (when the pump committed its
change), RESULT (the message's processing result) and VERSION (the flight's
state version before → after), then one indented line per field it changed:
FIELD, the operation (Set, Clear, Replace), the old value → the new one, as
the flight's JSON document shows them. A deletion (KIND DELETE by an FDEL,
VICTIM of a full-day snapshot, HISTORY when moved to history) changes no
field. -o wide adds TYPE, KIND, DAY and REASON; -o json and -o yaml print the
read API's document.

--day D lists the changes made while the flight was of operation day D,
--since T (RFC 3339) those committed at or after T, --limit N at most N
(0: all). The history is kept as long as the raw messages
(retention.archiveDays).

The data comes from the feed's read API, through the API server's service
proxy: you need get on services/proxy of <NAME>-pump and a token for the
feed (--service-account, --token-file or $FLIGHTFEED_TOKEN) whose user may
get flightfeeds/flights.`,
		Example: examples(m,
			"history pek 12345678 -n airport-pek --service-account ops",
			"history pek 12345678 -n airport-pek --token-file token --since 2026-09-09T08:00:00+08:00 -o yaml"),
		Args: cobra.ExactArgs(2),
	}
	if m == binaryMode {
		cmd.Use = "history (--config F | NAME [--service-account SA | --token-file F]) FLID [--day D] [--since T] [--limit N] [-o table|wide|json|yaml]"
		cmd.Long += `

With --config F it reads the database directly, without Kubernetes, and
takes FLID alone (history --config F 12345678); so does --feed [NS/]NAME.`
		cmd.Example = examples(m, "history --config pek.yaml 12345678", "history --config pek.yaml 12345678 --day 2026-09-09 -o json") + "\n" + cmd.Example
		cmd.Args = cobra.RangeArgs(1, 2)
	}
	source := addFeedSource(cmd, m, true)
	day := cmd.Flags().String("day", "", "only changes made while the flight was of this operation day (YYYY-MM-DD)")
	since := cmd.Flags().String("since", "", "only changes committed at or after this time (RFC 3339)")
	limit := cmd.Flags().Int("limit", 0, "at most this many changes (0: all)")
	var output func() (string, error)
	if m == binaryMode {
		output = outputFlag(cmd, outTable, "output format: table, wide, json or yaml", outTable, outWide, outJSON, outYAML)
	} else {
		output = outputFlag(cmd, "", "output format: json, yaml or wide (default: a table)", outJSON, outYAML, outWide)
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		feedArgs, flidArg := args[:len(args)-1], args[len(args)-1]
		if source.configFile() == "" && (source.feed == nil || *source.feed == "") && len(feedArgs) == 0 {
			return usageError{errors.New("NAME (the FlightFeed) and FLID are required")}
		}
		flid, err := flight.ParseFLID(flidArg)
		if err != nil {
			return usageError{fmt.Errorf("FLID %q: %w", flidArg, err)}
		}
		var f store.HistoryFilter
		if *day != "" {
			if _, err := time.Parse(time.DateOnly, *day); err != nil {
				return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
			}
			f.Day = *day
		}
		if *since != "" {
			if f.Since, err = time.Parse(time.RFC3339Nano, *since); err != nil {
				return usageError{fmt.Errorf("--since %q: must be an RFC 3339 time", *since)}
			}
		}
		if *limit < 0 {
			return usageError{fmt.Errorf("--limit %d: must be 0 or more", *limit)}
		}
		src, err := openHistorySource(cmd, source, feedArgs)
		if err != nil {
			return err
		}
		defer src.Close()
		page, err := readHistory(cmd.Context(), src, flid, f, *limit)
		if errors.Is(err, errFlightNotFound) {
			return fmt.Errorf("flight %s not found", flid)
		}
		if err != nil {
			return err
		}
		return printHistory(cmd.OutOrStdout(), format, src.Location(), page)
	}
	return cmd
}

// openHistorySource is where history reads (openReadSource).
func openHistorySource(cmd *cobra.Command, source *feedSource, feedArgs []string) (historySource, error) {
	return openReadSource(cmd, source, feedArgs,
		func(loc *time.Location, s *store.Store) historySource { return storeHistorySource{loc: loc, s: s} },
		func(a *feedAPI) historySource { return a })
}

// readHistory reads flid's changes f selects, at most limit (0: all), a
// page at a time, into one page (no cursor).
func readHistory(ctx context.Context, src historySource, flid flight.FLID, f store.HistoryFilter, limit int) (readapi.HistoryPage, error) {
	out := readapi.HistoryPage{FLID: flid.String(), Items: []store.FlightChange{}}
	cursor := ""
	for {
		n := historyPageSize
		if limit > 0 {
			n = min(n, limit-len(out.Items))
		}
		f.Limit = n
		page, err := src.FlightHistory(ctx, flid, f, cursor)
		if err != nil {
			return out, err
		}
		out.Items = append(out.Items, page.Items...)
		if cursor = page.Cursor; cursor == "" || (limit > 0 && len(out.Items) >= limit) {
			return out, nil
		}
	}
}

// printHistory prints a flight's history: its table (one line per change,
// then its fields indented), or the page as JSON or YAML.
func printHistory(w io.Writer, format string, loc *time.Location, page readapi.HistoryPage) error {
	bw := bufio.NewWriter(w)
	switch format {
	case outJSON, outYAML:
		doc, err := json.Marshal(page)
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		doc = append(doc, '\n')
		if format == outYAML {
			if doc, err = yaml.JSONToYAML(doc); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		_, _ = bw.Write(doc)
		return flush(bw)
	}
	stamp := refStamp(loc)
	header := []string{"MSG_ID", "STYP", "RECEIVED", "COMMITTED", "RESULT", "VERSION"}
	if format == outWide {
		header = append(header, "TYPE", "KIND", "DAY", "REASON")
	}
	rows := [][]string{header}
	for _, c := range page.Items {
		from := "-"
		if c.FromVersion != 0 {
			from = strconv.FormatInt(c.FromVersion, 10)
		}
		row := []string{orDash(idOrEmpty(c.MessageID)), orDash(c.Styp), stamp(c.ReceivedAt), stamp(c.CommittedAt), orDash(c.Result),
			from + "→" + strconv.FormatInt(c.Version, 10)}
		if format == outWide {
			row = append(row, orDash(c.Type), c.Kind, orDash(c.Day), orDash(oneLine(c.Reason, 60)))
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	line := func(r []string) {
		for i, cell := range r {
			if i == len(r)-1 {
				_, _ = bw.WriteString(cell + "\n")
				break
			}
			_, _ = bw.WriteString(cell + strings.Repeat(" ", widths[i]-len([]rune(cell))+3))
		}
	}
	line(rows[0])
	for i, c := range page.Items {
		line(rows[i+1])
		if len(c.Changes) == 0 && c.Kind != store.ChangeKindUpsert {
			_, _ = fmt.Fprintf(bw, "    %s\n", c.Kind)
		}
		for _, fc := range c.Changes {
			_, _ = fmt.Fprintf(bw, "    %s %s %s → %s\n", fc.Tag, fc.Op, historyValue(fc.Old), historyValue(fc.New))
		}
	}
	return flush(bw)
}

// historyValue is a change's old or new value as one line: its JSON, a
// scalar without quotes, "-" when absent.
func historyValue(v json.RawMessage) string {
	if len(v) == 0 {
		return "-"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return oneLine(s, 200)
	}
	return oneLine(string(v), 200)
}

// storeHistorySource reads the feed's database (--config); its cursors
// are the last state version listed.
type storeHistorySource struct {
	loc *time.Location
	s   *store.Store
}

func (b storeHistorySource) Location() *time.Location { return b.loc }
func (b storeHistorySource) Close()                   { b.s.Close() }

func (b storeHistorySource) FlightHistory(ctx context.Context, flid flight.FLID, f store.HistoryFilter, cursor string) (readapi.HistoryPage, error) {
	if cursor != "" {
		after, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return readapi.HistoryPage{}, fmt.Errorf("history cursor %q: %w", cursor, err)
		}
		f.After = after
	}
	limit := f.Limit
	f.Limit = limit + 1
	changes, err := b.s.FlightHistory(ctx, flid, f)
	if errors.Is(err, store.ErrNoFlight) {
		return readapi.HistoryPage{}, errFlightNotFound
	}
	if err != nil {
		return readapi.HistoryPage{}, err
	}
	out := readapi.HistoryPage{FLID: flid.String(), Items: changes}
	if len(changes) > limit {
		out.Items = changes[:limit]
		out.Cursor = strconv.FormatInt(changes[limit-1].Version, 10)
	}
	return out, nil
}

// FlightHistory is one page of GET flights/{flid}/history.
func (a *feedAPI) FlightHistory(ctx context.Context, flid flight.FLID, f store.HistoryFilter, cursor string) (readapi.HistoryPage, error) {
	q := url.Values{"limit": {strconv.Itoa(f.Limit)}}
	if f.Day != "" {
		q.Set("day", f.Day)
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page readapi.HistoryPage
	err := a.call(ctx, "GET", "flights/"+flid.String()+"/history", q, nil, &page)
	var he *httpStatusError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		return page, errFlightNotFound
	}
	return page, err
}
