package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// internalCitation matches a citation of a document a user of FlightFeed
// does not have: the original design documents ("seed" and its number, or
// their bare section marks, three digits and a section sign), the product
// specification's sections ("SPEC" and a section mark), and the project's
// issue tracker ("issue" and a number). The rules those documents gave are
// numbered in docs/processing-rules.md (R1–R10.11): cite those, or say the
// rule itself.
var internalCitation = regexp.MustCompile(`(?i:\bseeds? 0{2}[0-9])|\b0{2}[01] ?§|\bSPEC ?§|(?i:\bissues? [0-9]+)`)

// releasedSection is the heading of a released version in CHANGELOG.md.
var releasedSection = regexp.MustCompile(`^## [0-9]+\.[0-9]+\.[0-9]+`)

// TestNoCitationsOfDocumentsUsersDoNotHave walks every file git tracks
// (source, docs, chart, config, scripts) and fails on each citation of a
// document a user does not have. Exempt: vendor/; migrations/*.sql, which
// are released and never change (a migration's comment stays as written);
// and CHANGELOG.md's released sections (from the first "## X.Y.Z" heading
// on), which keep the words of their release. The Unreleased section is
// checked like every other file.
func TestNoCitationsOfDocumentsUsersDoNotHave(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files (the test reads the tracked files of a git checkout): %v", err)
	}
	checked := 0
	for _, path := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if path == "" || strings.HasPrefix(path, "vendor/") ||
			strings.HasPrefix(path, "migrations/") && strings.HasSuffix(path, ".sql") {
			continue
		}
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		checked++
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if path == "CHANGELOG.md" && releasedSection.MatchString(line) {
				break
			}
			for _, m := range internalCitation.FindAllString(line, -1) {
				t.Errorf("%s:%d cites %q, a document users do not have: cite docs/processing-rules.md's rule number (R5.6) or say the rule", path, n, m)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d tracked text files checked: not the repository's root?", checked)
	}
}
