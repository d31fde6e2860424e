// Command stamped prints buildinfo.Read's version and revision: the
// package's test links it with -X and reads them back.
package main

import (
	"fmt"

	"github.com/flightfeed/flightfeed/internal/buildinfo"
)

func main() {
	i := buildinfo.Read()
	fmt.Print(i.Version, " ", i.Revision)
}
