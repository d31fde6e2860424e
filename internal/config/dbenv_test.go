package config_test

import (
	"strings"
	"testing"

	"github.com/flightfeed/flightfeed/internal/config"
)

// A libpq file variable set but empty names no file: it is not refused;
// one set to a path is.
func TestDatabaseFileEnvironmentEmptyIsUnset(t *testing.T) {
	for _, name := range config.FileEnvironment {
		t.Setenv(name, "")
	}
	if err := config.CheckDatabaseEnvironment(); err != nil {
		t.Fatalf("empty variables refused: %v", err)
	}
	t.Setenv("PGSSLKEY", "/tmp/key")
	if err := config.CheckDatabaseEnvironment(); err == nil || !strings.Contains(err.Error(), "PGSSLKEY") {
		t.Fatalf("err = %v, want PGSSLKEY refused", err)
	}
}
