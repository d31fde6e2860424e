package cli

import (
	"os"
	"testing"
)

// mainEnv makes the test binary run the command line instead of the tests,
// so a test can start a real flightfeed process and signal it.
const mainEnv = "FLIGHTFEED_CLI_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Execute())
	}
	os.Exit(m.Run())
}
