package cli

import (
	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/cli/kubectl"
)

// pluginKubectl is what cmd/kubectl-flightfeed hands the plugin's commands:
// kubectl's own flags and printers.
var pluginKubectl = Kubectl{Flags: kubectl.Flags, PrintTable: kubectl.PrintTable, PrintObject: kubectl.PrintObject}

// newPluginCommand is the plugin's command tree as its binary builds it.
func newPluginCommand() *cobra.Command { return NewPluginCommand(pluginKubectl) }
