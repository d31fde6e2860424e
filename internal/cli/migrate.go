package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/store"
)

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate --config F",
		Short: "Apply the database migrations (the pump also does this at start)",
		Args:  cobra.NoArgs,
	}
	load := configFlag(cmd)
	timeout := cmd.Flags().Duration("timeout", 5*time.Minute, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		feed, err := load(cmd.Context())
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		defer cancel()
		dbTLS, err := feed.DatabaseTLS()
		if err != nil {
			return err
		}
		applied, err := store.Migrate(ctx, feed.Secrets.DatabaseDSN, store.WithTLS(dbTLS))
		for _, m := range applied {
			fmt.Fprintf(cmd.OutOrStdout(), "applied %s\n", m.Source)
		}
		if err != nil {
			return err
		}
		current, _, err := store.SchemaVersion(ctx, feed.Secrets.DatabaseDSN, store.WithTLS(dbTLS))
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "schema at version %d\n", current)
		return nil
	}
	return cmd
}
