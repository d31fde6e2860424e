package cli

import (
	"github.com/spf13/cobra"
)

// The command below is declared with its final flags so `--help` shows the
// whole contract of SPEC §5; it returns an error until it is built.

func newReplayCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay --config F --id N --policy P",
		Short: "Replay an archived DEAD message under an explicit policy (as-new or skip-conflicts)",
		Args:  cobra.NoArgs,
	}
	load := configFlag(cmd)
	cmd.Flags().Int64("id", 0, "mailbox row id of the DEAD message")
	cmd.Flags().String("policy", "", "as-new or skip-conflicts")
	cmd.RunE = func(*cobra.Command, []string) error {
		if _, err := load(); err != nil {
			return err
		}
		return notImplemented("replay")
	}
	return cmd
}
