package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceIsCurrent fails when docs/configuration.md's reference is
// not what the CRDs generate (a field added, a doc comment changed, and
// `make manifests` run without `go run ./hack/crddocs`).
func TestReferenceIsCurrent(t *testing.T) {
	err := run(filepath.Join("..", ".."), true)
	if errors.Is(err, errStale) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestStaleReferenceFails: a reference with a field missing is reported
// stale, and the generator covers both kinds and their spec fields.
func TestStaleReferenceFails(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"docs", filepath.Join("config", "crd", "bases")} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join("..", "..", "config", "crd", "bases")
	files, err := filepath.Glob(filepath.Join(src, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", src, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "config", "crd", "bases", filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### FlightFeed (", "### FlightFeedDay (", "| `spec.mailbox.batchSize` |", "| `spec.kafka.brokers` |"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
	stale := strings.Replace(string(doc), "| `spec.mailbox.batchSize` |", "| `spec.mailbox.batchSizes` |", 1)
	if err := os.WriteFile(filepath.Join(root, "docs", "configuration.md"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); !errors.Is(err, errStale) {
		t.Fatalf("a changed reference: got %v, want errStale", err)
	}
}
