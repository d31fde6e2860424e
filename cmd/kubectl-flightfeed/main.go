// Command kubectl-flightfeed is the kubectl plugin `kubectl flightfeed`:
// the commands a user of a running feed needs (status, days, dead, parked,
// replay, rerequest, get flight, export, ref, version), with kubectl's own
// flags and printers. It only wires: the commands are package cli's, the
// kubectl library they take is package kubectl's; the flightfeed binary
// (main.go) links neither that library nor this plugin.
package main

import (
	"os"
	// The airport time zone must load on any machine too.
	_ "time/tzdata"

	"github.com/flightfeed/flightfeed/internal/cli"
	"github.com/flightfeed/flightfeed/internal/cli/kubectl"
)

func main() {
	os.Exit(cli.ExecutePlugin(cli.Kubectl{Flags: kubectl.Flags, PrintTable: kubectl.PrintTable, PrintObject: kubectl.PrintObject}))
}
