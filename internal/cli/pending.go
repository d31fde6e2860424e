package cli

import (
	"time"

	"github.com/spf13/cobra"
)

// The commands below are declared with their final flags so `--help` shows
// the whole contract of SPEC §5; each returns an error until its issue lands.

func newManagerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Kubernetes operator (every FlightFeed, Lease-elected pumps, status, read API)",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return notImplemented("manager") },
	}
	f := cmd.Flags()
	f.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or in-cluster)")
	f.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint")
	f.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.String("api-bind-address", ":8082", "address of the read API")
	f.String("identity", "", "identity in Leases (default: pod name, else host name)")
	f.Duration("lease-duration", 15*time.Second, "how long a Lease is valid without renewal")
	f.Duration("renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops its pump")
	f.Duration("retry-period", 2*time.Second, "how often Lease acquisition and renewal are tried")
	return cmd
}

func newReplayCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay --config F --id N --policy P",
		Short: "Replay an archived DEAD message under an explicit policy (force-state or as-new)",
		Args:  cobra.NoArgs,
	}
	load := configFlag(cmd)
	cmd.Flags().Int64("id", 0, "mailbox row id of the DEAD message")
	cmd.Flags().String("policy", "", "force-state or as-new")
	cmd.RunE = func(*cobra.Command, []string) error {
		if _, err := load(); err != nil {
			return err
		}
		return notImplemented("replay")
	}
	return cmd
}
