package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeIsAFrontDoor: the README fits on a screen or two,
// shows helm install and a first FlightFeed early, and its set-up is the
// two commands (.ci/run runs the second).
func TestReadmeIsAFrontDoor(t *testing.T) {
	readme := readText(t, "README.md")
	lines := strings.Split(strings.TrimSuffix(readme, "\n"), "\n")
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines, at most 200: move the detail to docs/", len(lines))
	}
	first := strings.Join(lines[:min(60, len(lines))], "\n")
	for _, want := range []string{"helm install ", "kind: FlightFeed", "make demo", "make test"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first 60 lines lack %q", want)
		}
	}
	for _, want := range []string{"kubectl get ff", "kubectl get ffday", "kubectl flightfeed status", "docs/architecture.svg"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	// The install command pins the image of this very version.
	appVersion := "(none)"
	if m := regexp.MustCompile(`(?m)^appVersion: *"?([^"\n]+)"?$`).FindStringSubmatch(readText(t, "charts/flightfeed/Chart.yaml")); m != nil {
		appVersion = m[1]
	}
	for _, m := range regexp.MustCompile(`image\.tag=(\S+)`).FindAllStringSubmatch(readme, -1) {
		if m[1] != appVersion {
			t.Errorf("README.md installs image.tag=%s; the chart's appVersion is %s", m[1], appVersion)
		}
	}
	if ci := readText(t, ".ci/run"); !regexp.MustCompile(`(?m)^(exec )?make test$`).MatchString(ci) {
		t.Errorf(".ci/run does not run exactly the README's `make test`:\n%s", ci)
	}
}

// TestRunbookCoversAlertsAndReasons: docs/operations.md has a section, with
// a stable anchor, for every alert of the chart's PrometheusRule
// (charts/flightfeed/files/alerts.yaml, which templates/prometheusrule.yaml
// renders) and for every condition reason in api/v1alpha1/conditions.go.
// The alerts' runbook links and `kubectl get ff -o wide` readers land there.
func TestRunbookCoversAlertsAndReasons(t *testing.T) {
	runbook := readText(t, "docs/operations.md")
	headings := map[string]bool{}
	for _, l := range strings.Split(runbook, "\n") {
		if h, ok := strings.CutPrefix(l, "### "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert:\s*"?([A-Za-z0-9]+)"?\s*$`).FindAllStringSubmatch(readText(t, "charts/flightfeed/files/alerts.yaml"), -1)
	if len(alerts) < 9 {
		t.Fatalf("read %d alerts from charts/flightfeed/files/alerts.yaml, want at least 9", len(alerts))
	}
	for _, a := range alerts {
		if !headings[a[1]] {
			t.Errorf("alert %s has no runbook section (### %s, anchor #%s) in docs/operations.md", a[1], a[1], anchor(a[1]))
		}
	}
	reasons := conditionReasons(t, "api/v1alpha1/conditions.go")
	if len(reasons) < 15 {
		t.Fatalf("read %d condition reasons from api/v1alpha1/conditions.go, want at least 15", len(reasons))
	}
	for _, r := range reasons {
		if !headings["Reason "+r] {
			t.Errorf("condition reason %s has no runbook section (### Reason %s, anchor #%s) in docs/operations.md", r, r, anchor("Reason "+r))
		}
	}
}

// conditionReasons returns the values of every constant of type
// ConditionReason in file.
func conditionReasons(t *testing.T, file string) []string {
	t.Helper()
	return stringConstants(t, file, "ConditionReason")
}

// TestDocsLinksStayInTheRepository: every relative link of README.md and
// docs/*.md names a file of the repository (never ../shared or another
// place outside it), and every #anchor names a heading of its page.
func TestDocsLinksStayInTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "README.md", "CHANGELOG.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text := readText(t, page)
		for _, m := range link.FindAllStringSubmatch(stripCode(text), -1) {
			target := m[1]
			if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "http://") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				abs, err := filepath.Abs(path)
				if err != nil {
					t.Fatal(err)
				}
				if abs != root && !strings.HasPrefix(abs, root+string(filepath.Separator)) {
					t.Errorf("%s links %s, outside the repository", page, target)
					continue
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links %s, which does not exist", page, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", page, target, path, frag)
			}
		}
	}
}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(stripCode(readText(t, path)))))
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "#") {
			out[anchor(strings.TrimSpace(strings.TrimLeft(l, "#")))] = true
		}
	}
	return out
}

// anchor is GitHub's anchor of a heading: lower case, punctuation and
// symbols other than '-' and '_' dropped (an arrow, a dash), spaces to '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// stripCode drops fenced code blocks, whose '#' lines are shell comments,
// and the text of inline code, where brackets are no links.
func stripCode(s string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(inlineCode.ReplaceAllString(l, "``") + "\n")
		}
	}
	return b.String()
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
