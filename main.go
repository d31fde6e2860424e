// Command flightfeed is the one FlightFeed binary: the Kubernetes operator
// and the commands that run or inspect one feed without Kubernetes. It only
// wires; see internal/cli.
package main

import (
	"os"
	// The airport time zone must load in a distroless image too.
	_ "time/tzdata"

	"github.com/flightfeed/flightfeed/internal/cli"
)

func main() {
	os.Exit(cli.Execute())
}
