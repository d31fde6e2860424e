package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPictureIsCurrent fails when docs/architecture.svg is not what its
// source beside it renders (the source edited, the SVG not regenerated, or
// the SVG edited by hand).
func TestPictureIsCurrent(t *testing.T) {
	if err := run(filepath.Join("..", ".."), true); err != nil {
		t.Fatal(err)
	}
}

// TestPictureShowsTheParts: the picture has what docs/architecture.md needs it to show,
// and a changed source makes the check fail.
func TestPictureShowsTheParts(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", source))
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Render(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MySQL mailbox", "pump pod (leader)", "pump pod (standby)", "Lease", "PostgreSQL",
		"Kafka KAFKA_SCHD", "Kafka KAFKA_MSG", "operator: flightfeed manager", "FlightFeed pek", "FlightFeedDay"} {
		if !strings.Contains(string(svg), ">"+want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(src), "Kafka KAFKA_MSG", "Kafka KAFKA_NOTICE", 1)
	if err := os.WriteFile(filepath.Join(root, source), []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, target), svg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); !errors.Is(err, errStale) {
		t.Fatalf("a changed source: got %v, want errStale", err)
	}
	if _, err := Render([]byte("width: 10\nheight: 10\nedges: [{from: \"nowhere:top\", to: \"x:left\"}]\n")); err == nil {
		t.Error("an edge to an unknown box rendered")
	}
}
