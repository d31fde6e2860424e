package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestArchitectureListsEveryPackage holds the layout block of
// docs/architecture.md to the code (the block moved out of the README)
// : every package `go list ./...` names has a line
// there, itself or a folder above it, so a new package without one fails.
func TestArchitectureListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(readme, []byte("\n## Layout\n"))
	if !ok {
		t.Fatal("docs/architecture.md has no Layout section")
	}
	_, block, ok := bytes.Cut(section, []byte("\n```\n"))
	if !ok {
		t.Fatal("docs/architecture.md's Layout section has no layout block")
	}
	block, _, _ = bytes.Cut(block, []byte("\n```"))
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == ' ' {
			continue
		}
		// "internal/cli, main.go  cobra commands": names joined by commas.
		fields := strings.Fields(line)
		for i := 0; i < len(fields); i++ {
			listed[strings.TrimSuffix(strings.TrimSuffix(fields[i], ","), "/")] = true
			if !strings.HasSuffix(fields[i], ",") {
				break
			}
		}
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	module := "github.com/flightfeed/flightfeed"
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel == "" {
			rel = "main.go"
		}
		found := false
		for p := rel; p != "" && p != "."; {
			if listed[p] {
				found = true
				break
			}
			i := strings.LastIndex(p, "/")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if !found {
			t.Errorf("package %s has no line in the layout block of docs/architecture.md", rel)
		}
	}
	if len(listed) < 20 {
		t.Fatalf("read only %d entries from the layout block: %v", len(listed), listed)
	}
}
