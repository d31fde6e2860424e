package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/flight"
	"github.com/flightfeed/flightfeed/internal/store"
)

// openStore connects to the feed's database and refuses to work on a schema
// older than the binary's, so a missing `migrate` is named, not guessed.
func openStore(ctx context.Context, feed *config.Feed) (*store.Store, error) {
	return openStoreAs(ctx, feed, feed.Secrets.DatabaseDSN, false)
}

// openReadOnlyStore is openStore for the commands that only read (export,
// ledger): as database.readDsn's role when the file gives one, else the
// writer's, every session read-only either way.
func openReadOnlyStore(ctx context.Context, feed *config.Feed) (*store.Store, error) {
	dsn := feed.Secrets.DatabaseDSN
	if feed.Secrets.ReadDatabaseDSN != "" {
		dsn = feed.Secrets.ReadDatabaseDSN
	}
	return openStoreAs(ctx, feed, dsn, true)
}

// openFeedStore loads the feed and opens its database with open (openStore,
// or openReadOnlyStore for the commands that only read): the one way the
// store commands reach their store, so each says its load and open errors
// alike. The caller closes the store.
func openFeedStore(ctx context.Context, load feedLoader, open func(context.Context, *config.Feed) (*store.Store, error)) (*config.Feed, *store.Store, error) {
	feed, err := load(ctx)
	if err != nil {
		return nil, nil, err
	}
	s, err := open(ctx, feed)
	if err != nil {
		return nil, nil, err
	}
	return feed, s, nil
}

func openStoreAs(ctx context.Context, feed *config.Feed, dsn string, readOnly bool) (*store.Store, error) {
	dbTLS, err := feed.DatabaseTLS()
	if err != nil {
		return nil, err
	}
	current, latest, err := store.SchemaVersion(ctx, dsn, store.WithTLS(dbTLS))
	if err != nil {
		return nil, err
	}
	if current != latest {
		return nil, fmt.Errorf("database schema is at version %d, this binary needs %d: run `flightfeed migrate --config F`", current, latest)
	}
	return store.Open(ctx, dsn, store.Options{
		MaxConns: feed.Spec.Database.MaxConns, Location: feed.Location, ReadOnly: readOnly, TLS: dbTLS,
		MaxMessageBytes: feed.Spec.Mailbox.MaxMessageBytes})
}

// exportPageSize is how many flights `export` reads per keyset page.
const exportPageSize = 500

func newExportCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export NAME [--flid ID] [--day D] [--service-account SA | --token-file F]",
		Short: "Print the full current state as canonical JSON lines, sorted by FLID",
		Long: `export prints one canonical JSON document per flight (the KAFKA_SCHD document),
sorted by FLID. It pages through the feed NAME's read API (through the API
server's service proxy: get on services/proxy of <NAME>-pump, a token whose
user may get flightfeeds/flights); each page is one consistent read.`,
		Example: examples(m,
			"export pek -n airport-pek --service-account ops > pek.jsonl",
			"export pek -n airport-pek --token-file token --day 2026-09-09"),
		Args: cobra.ExactArgs(1),
	}
	if !m.plugin() {
		cmd.Use = "export (--config F | NAME [--service-account SA | --token-file F]) [--flid ID] [--day D]"
		cmd.Long += `

With --config it reads the database directly, in one consistent
transaction; --feed [NS/]NAME is the same as NAME.`
		cmd.Example = examples(m, "export --config pek.yaml --day 2026-09-09") + "\n" + cmd.Example
		cmd.Args = cobra.MaximumNArgs(1)
	}
	source := addFeedSource(cmd, m, true)
	flid := cmd.Flags().String("flid", "", "only this flight (1 to 12 digits)")
	day := cmd.Flags().String("day", "", "only flights of this operation day (YYYY-MM-DD)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var filter store.Filter
		if *flid != "" {
			id, err := flight.ParseFLID(*flid)
			if err != nil {
				return usageError{fmt.Errorf("--flid %q: %w", *flid, err)}
			}
			filter.FLID = &id
		}
		if *day != "" {
			if _, err := time.Parse(time.DateOnly, *day); err != nil {
				return usageError{fmt.Errorf("--day %q: must be YYYY-MM-DD", *day)}
			}
			filter.Day = *day
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		path := source.configFile()
		switch {
		case path != "" && source.kube(args):
			return usageError{errors.New("give either --config F (the database directly) or NAME (its read API in the cluster), not both")}
		case path == "":
			a, err := source.api(cmd.Context(), args)
			if err != nil {
				return err
			}
			if err := exportFromAPI(cmd.Context(), a, filter, w); err != nil {
				return err
			}
			return flush(w)
		}
		_, s, err := openFeedStore(cmd.Context(), func(context.Context) (*config.Feed, error) {
			feed, err := config.Load(path)
			if err != nil {
				return nil, usageError{err}
			}
			return feed, nil
		}, openReadOnlyStore)
		if err != nil {
			return err
		}
		defer s.Close()
		// One snapshot, read exportPageSize flights at a time: a big day
		// costs the memory of one page.
		err = s.EachFlight(cmd.Context(), filter, exportPageSize, func(st flight.State) error {
			doc, err := flight.CanonicalJSON(st)
			if err != nil {
				return fmt.Errorf("render flight %s: %w", st.FLID, err)
			}
			_, _ = w.Write(doc)
			_ = w.WriteByte('\n')
			return nil
		})
		if err != nil {
			return err
		}
		return flush(w)
	}
	return cmd
}

// exportFromAPI writes the flights filter selects, one document a line,
// from the feed's read API: the one flight of --flid (none when it is
// absent or of another day), else every page of the list.
func exportFromAPI(ctx context.Context, a *feedAPI, filter store.Filter, w *bufio.Writer) error {
	write := func(doc json.RawMessage) error {
		_, _ = w.Write(doc)
		return w.WriteByte('\n')
	}
	if filter.FLID == nil {
		return a.EachFlight(ctx, filter.Day, exportPageSize, write)
	}
	doc, err := a.Flight(ctx, filter.FLID.String())
	var he *httpStatusError
	switch {
	case errors.As(err, &he) && he.code == http.StatusNotFound:
		return nil
	case err != nil:
		return err
	}
	if filter.Day != "" {
		var d struct {
			Day string `json:"OPERATION_DAY"`
		}
		if json.Unmarshal(doc, &d) != nil || d.Day != filter.Day {
			return nil
		}
	}
	return write(doc)
}

func newLedgerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger --config F",
		Short: "Print the per-day snapshot ledger as JSON lines, days ascending",
		Long: `ledger prints {"day":"YYYY-MM-DD","version":N,"last_message_id":N,"flights":N}
per operation day, days ascending; flights is the size of the day's roster.`,
		Args: cobra.NoArgs,
	}
	load := configFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_, s, err := openFeedStore(cmd.Context(), load, openReadOnlyStore)
		if err != nil {
			return err
		}
		defer s.Close()
		days, err := s.Ledger(cmd.Context())
		if err != nil {
			return err
		}
		w := bufio.NewWriter(cmd.OutOrStdout())
		return writeJSONLines(w, days)
	}
	return cmd
}

// writeJSONLines writes rows as JSON lines (one object per line), then
// flushes w.
func writeJSONLines[T any](w *bufio.Writer, rows []T) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	return flush(w)
}

func flush(w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
