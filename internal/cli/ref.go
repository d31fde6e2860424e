package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/readapi"
	"github.com/flightfeed/flightfeed/internal/sis"
	"github.com/flightfeed/flightfeed/internal/store"
)

// refPageSize is how many records `ref NAME KIND` asks the read API for
// at once, and reads from the database at once with --config.
const refPageSize = readapi.DefaultPageSize

// refSource is where `ref` reads: the feed's database (--config) or its
// read API. Both answer in the read API's shapes, so the two print alike.
type refSource interface {
	Location() *time.Location
	RefLists(ctx context.Context) ([]readapi.RefList, error)
	// RefRecords reads up to limit records of kind, keys ascending, after
	// the key after ("" from the start); more says whether others follow.
	RefRecords(ctx context.Context, kind sis.ReferenceKind, after string, limit int) (recs []readapi.RefRecord, more bool, err error)
	// RefRecord reads one record; errRefNotFound when it is not stored.
	RefRecord(ctx context.Context, kind sis.ReferenceKind, key string) (readapi.RefRecord, error)
	Close()
}

// errRefNotFound is a reference record that is not stored.
var errRefNotFound = errors.New("not found")

func newRefCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ref NAME [KIND [KEY]] [--limit N] [--after KEY] [-o json|yaml|wide]",
		Short: "Show a FlightFeed's reference data: its lists (airlines, gates, …), a list's records, one record",
		Long: `ref shows the reference data the AODB sent the feed NAME (or NS/NAME): the
lists of airlines, airports, gates, stands, … (docs/processing-rules.md,
"Reference data"), each record as the AODB sent it.

Without KIND it lists every list: LIST and TYPE (its SIS TYPE), RECORDS,
LAST-MESSAGE (the mailbox row that last changed it), UPDATED (when),
REPLACED (the last whole list received, DNLD or RESP: MESSAGE@TIME), and
with -o wide its key elements and what it holds. A list never received
shows 0 records and "-".

With KIND (a list's name, airlines, or its SIS TYPE, AIRL) it lists that
list's records, keys ascending: KEY, NAME (the record's name element, such
as ONAM or GTNM, when it has one), MESSAGE (the mailbox row that last
changed it) and UPDATED; -o wide adds the record itself. --limit N shows at
most N records (0: all) and says on standard error how to go on when more
follow; --after KEY starts after that key.

With KIND KEY it prints that one record: its list, key, message, time and
the record ("record"), as JSON (-o yaml: YAML; -o wide: the table row).

-o json and -o yaml print the documents the read API serves. The data
comes from the feed's read API, through the API server's service proxy: you
need get on services/proxy of <NAME>-pump and a token for the feed
(--service-account, --token-file or $FLIGHTFEED_TOKEN) whose user may get
flightfeeds/flights.`,
		Example: examples(m,
			"ref pek -n airport-pek --service-account ops",
			"ref pek airlines -n airport-pek --service-account ops --limit 50",
			"ref pek gates B7 -n airport-pek --token-file token -o yaml"),
		Args: cobra.RangeArgs(1, 3),
	}
	if !m.plugin() {
		cmd.Use = "ref (--config F | NAME [--service-account SA | --token-file F]) [KIND [KEY]] [--limit N] [--after KEY] [-o table|wide|json]"
		cmd.Long += `

With --config F it reads the database directly, without Kubernetes, and
takes KIND and KEY alone (ref --config F airlines CA); so does --feed
[NS/]NAME. On this binary -o json prints one JSON object per line.`
		cmd.Example = examples(m, "ref --config pek.yaml", "ref --config pek.yaml gates", "ref --config pek.yaml AIRL CA -o json") + "\n" + cmd.Example
		cmd.Args = cobra.MaximumNArgs(3)
	}
	source := addFeedSource(cmd, m, true)
	limit := cmd.Flags().Int("limit", 0, "with KIND: at most this many records (0: all)")
	after := cmd.Flags().String("after", "", "with KIND: start after this key")
	output := tableOutput(cmd, m)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		format, err := output()
		if err != nil {
			return err
		}
		feedArgs, refArgs, err := splitRefArgs(source, args)
		if err != nil {
			return err
		}
		// The command line is checked before the feed is reached.
		var kind sis.ReferenceKind
		switch {
		case *limit < 0:
			return usageError{fmt.Errorf("--limit %d: must be 0 or more", *limit)}
		case len(refArgs) == 0 && (*limit != 0 || *after != ""):
			return usageError{errors.New("--limit and --after page a list's records: name the list (KIND)")}
		case len(refArgs) == 2 && (*limit != 0 || *after != ""):
			return usageError{errors.New("--limit and --after page a list's records, not one record (KIND KEY)")}
		case len(refArgs) > 0:
			if kind, err = readapi.LookupRefKind(refArgs[0]); err != nil {
				return usageError{err}
			}
		}
		src, err := openRefSource(cmd, source, feedArgs)
		if err != nil {
			return err
		}
		defer src.Close()
		switch len(refArgs) {
		case 0:
			return printRefLists(cmd, m, format, src)
		case 1:
			return printRefRecords(cmd, m, format, src, kind, *after, *limit)
		}
		return printRefRecord(cmd, m, format, src, kind, refArgs[1])
	}
	return cmd
}

// splitRefArgs splits ref's positional arguments into the feed's (NAME)
// and KIND [KEY]: with --config, or --feed on the binary, every one is
// KIND or KEY, else the first names the feed.
func splitRefArgs(source *feedSource, args []string) (feedArgs, refArgs []string, err error) {
	switch {
	case source.configFile() != "" || (source.feed != nil && *source.feed != ""):
		refArgs = args
	case len(args) > 0:
		feedArgs, refArgs = args[:1], args[1:]
	}
	if len(refArgs) > 2 {
		return nil, nil, usageError{fmt.Errorf("at most KIND and KEY after the feed, not %q", strings.Join(refArgs, " "))}
	}
	return feedArgs, refArgs, nil
}

// openRefSource is where ref reads (openReadSource).
func openRefSource(cmd *cobra.Command, source *feedSource, feedArgs []string) (refSource, error) {
	return openReadSource(cmd, source, feedArgs,
		func(loc *time.Location, s *store.Store) refSource { return storeRefSource{loc: loc, s: s} },
		func(a *feedAPI) refSource { return a })
}

// openReadSource is where a read command reads: the database of --config,
// wrapped by fromStore, or the read API of the feed feedArgs (or --feed)
// names, wrapped by fromAPI.
func openReadSource[T any](cmd *cobra.Command, source *feedSource, feedArgs []string,
	fromStore func(*time.Location, *store.Store) T, fromAPI func(*feedAPI) T) (T, error) {
	var none T
	path := source.configFile()
	switch {
	case path != "" && source.kube(feedArgs):
		return none, usageError{errors.New("give either --config F (the database directly) or NAME (its read API in the cluster), not both")}
	case path != "":
		feed, err := config.Load(path)
		if err != nil {
			return none, usageError{err}
		}
		s, err := openReadOnlyStore(cmd.Context(), feed)
		if err != nil {
			return none, err
		}
		return fromStore(feed.Location, s), nil
	}
	a, err := source.api(cmd.Context(), feedArgs)
	if err != nil {
		return none, err
	}
	return fromAPI(a), nil
}

// printRefLists prints every list of the catalogue.
func printRefLists(cmd *cobra.Command, m mode, format string, src refSource) error {
	lists, err := src.RefLists(cmd.Context())
	if err != nil {
		return err
	}
	stamp := refStamp(src.Location())
	table := columns("LIST", "TYPE", "RECORDS", "LAST-MESSAGE", "UPDATED", "REPLACED", "KEY+", "TITLE+")
	return printRows(cmd.OutOrStdout(), m, format, table, lists, func(l readapi.RefList) []any {
		replaced := "-"
		if l.ReplacedBy != 0 {
			replaced = strconv.FormatInt(l.ReplacedBy, 10) + "@" + strings.Replace(stamp(l.ReplacedAt), " ", "T", 1)
		}
		return []any{l.Name, l.Type, l.Records, orDash(idOrEmpty(l.LastMessageID)), stamp(l.UpdatedAt), replaced,
			strings.Join(l.Key, ","), l.Title}
	})
}

// printRefRecords prints the records of kind after the key after, at most
// limit (0: all), reading them a page at a time. When limit cut the list
// it says on standard error how to go on.
func printRefRecords(cmd *cobra.Command, m mode, format string, src refSource, kind sis.ReferenceKind, after string, limit int) error {
	var recs []readapi.RefRecord
	for {
		n := refPageSize
		if limit > 0 {
			n = min(n, limit-len(recs))
		}
		page, more, err := src.RefRecords(cmd.Context(), kind, after, n)
		if err != nil {
			return err
		}
		recs = append(recs, page...)
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].Key
		if limit > 0 && len(recs) >= limit {
			_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "flightfeed: the first %d %s only: more follow (--after %s)\n", len(recs), kind.Name, after)
			break
		}
	}
	return printRefRecordRows(cmd, m, format, src, recs)
}

// printRefRecord prints one record: its document (-o json, the default,
// or yaml), or its table row (-o table|wide).
func printRefRecord(cmd *cobra.Command, m mode, format string, src refSource, kind sis.ReferenceKind, key string) error {
	rec, err := src.RefRecord(cmd.Context(), kind, key)
	if errors.Is(err, errRefNotFound) {
		return fmt.Errorf("%s (%s) record %q not found", kind.Name, kind.Type, key)
	}
	if err != nil {
		return err
	}
	// The binary's default -o (table) prints the document too, as the
	// plugin's does: one record is read for its fields.
	if format == outWide || (format == outTable && cmd.Flags().Changed("output")) {
		return printRefRecordRows(cmd, m, format, src, []readapi.RefRecord{rec})
	}
	doc, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	out := append(doc, '\n')
	if format == outYAML {
		if out, err = yaml.JSONToYAML(doc); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	if _, err := cmd.OutOrStdout().Write(out); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// printRefRecordRows prints records as ref's table of records, or their
// documents for -o json|yaml.
func printRefRecordRows(cmd *cobra.Command, m mode, format string, src refSource, recs []readapi.RefRecord) error {
	stamp := refStamp(src.Location())
	table := columns("KEY", "NAME", "MESSAGE", "UPDATED", "RECORD+")
	return printRows(cmd.OutOrStdout(), m, format, table, recs, func(r readapi.RefRecord) []any {
		// Compact: the database's text of a record spaces it, the read
		// API's JSON does not; the two print alike.
		var doc bytes.Buffer
		if json.Compact(&doc, r.Record) != nil {
			doc.Reset()
			doc.Write(r.Record)
		}
		return []any{r.Key, orDash(oneLine(refName(r.Record), 60)), r.MessageID, stamp(r.UpdatedAt), oneLine(doc.String(), 1<<20)}
	})
}

// refName is a record's name: its first element (in name order) whose
// name says it is one (ends in NAM or NM, or is NAME; ONAM, GTNM) and
// whose value is text, "" when it has none. The interface names its lists'
// name elements so; a record is free to carry none.
func refName(doc json.RawMessage) string {
	var fields map[string]any
	if json.Unmarshal(doc, &fields) != nil {
		return ""
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !strings.HasSuffix(k, "NAM") && !strings.HasSuffix(k, "NM") && k != "NAME" {
			continue
		}
		if s, ok := fields[k].(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// refStamp renders a time airport-local, "-" when zero.
func refStamp(loc *time.Location) func(time.Time) string {
	return func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.In(loc).Format("2006-01-02 15:04:05")
	}
}

// idOrEmpty is a message id, "" when none.
func idOrEmpty(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// storeRefSource reads the feed's database (--config).
type storeRefSource struct {
	loc *time.Location
	s   *store.Store
}

func (b storeRefSource) Location() *time.Location { return b.loc }
func (b storeRefSource) Close()                   { b.s.Close() }

func (b storeRefSource) RefLists(ctx context.Context) ([]readapi.RefList, error) {
	stored, err := b.s.ReferenceLists(ctx)
	if err != nil {
		return nil, err
	}
	return readapi.RefLists(stored), nil
}

func (b storeRefSource) RefRecords(ctx context.Context, kind sis.ReferenceKind, after string, limit int) ([]readapi.RefRecord, bool, error) {
	recs, err := b.s.ReferenceRecords(ctx, kind.Type, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	more := len(recs) > limit
	out := make([]readapi.RefRecord, 0, min(len(recs), limit))
	for _, r := range recs[:min(len(recs), limit)] {
		out = append(out, readapi.RefRecordOf(kind, r))
	}
	return out, more, nil
}

func (b storeRefSource) RefRecord(ctx context.Context, kind sis.ReferenceKind, key string) (readapi.RefRecord, error) {
	r, err := b.s.ReferenceRecordByKey(ctx, kind.Type, key)
	if errors.Is(err, store.ErrNoReferenceRecord) {
		return readapi.RefRecord{}, errRefNotFound
	}
	if err != nil {
		return readapi.RefRecord{}, err
	}
	return readapi.RefRecordOf(kind, r), nil
}

// RefLists is GET ref.
func (a *feedAPI) RefLists(ctx context.Context) ([]readapi.RefList, error) {
	var out struct{ Items []readapi.RefList }
	return out.Items, a.call(ctx, "GET", "ref", nil, nil, &out)
}

// RefRecords is one page of GET ref/{kind}, after a key.
func (a *feedAPI) RefRecords(ctx context.Context, kind sis.ReferenceKind, after string, limit int) ([]readapi.RefRecord, bool, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	var page readapi.RefPage
	if err := a.call(ctx, "GET", "ref/"+kind.Type, q, nil, &page); err != nil {
		return nil, false, err
	}
	return page.Items, page.Cursor != "", nil
}

// RefRecord is GET ref/{kind}/{key}.
func (a *feedAPI) RefRecord(ctx context.Context, kind sis.ReferenceKind, key string) (readapi.RefRecord, error) {
	var out readapi.RefRecord
	err := a.call(ctx, "GET", "ref/"+kind.Type+"/"+key, nil, nil, &out)
	var he *httpStatusError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		return out, errRefNotFound
	}
	return out, err
}
