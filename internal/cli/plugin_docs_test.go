package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every `kubectl flightfeed …` a user reads — the README, docs/, the
// chart's NOTES and the krew manifest — is a command line the plugin
// takes: its command exists, its flags parse and its positional
// arguments are what the command wants. (The flightfeed binary's forms,
// such as --feed NS/NAME, are refused by the plugin.)
func TestDocumentedPluginCommandsParse(t *testing.T) {
	files := []string{"../../README.md", "../../charts/flightfeed/templates/NOTES.txt", "../../hack/krew/flightfeed.yaml"}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	// A command line ends where prose, a comment, a redirection or a
	// code span does.
	use := regexp.MustCompile("kubectl flightfeed ([^`#|()>\n]*)")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range use.FindAllStringSubmatch(line, -1) {
				args := strings.Fields(m[1])
				if len(args) == 0 || args[0] == "…" || args[0] == "shows" {
					continue // prose about the plugin, not a command line
				}
				checked++
				if err := parsePluginLine(args); err != "" {
					t.Errorf("%s:%d: %q: %s", filepath.Base(f), n+1, strings.TrimSpace(m[0]), err)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d plugin command lines found: the scan is broken", checked)
	}
}

// parsePluginLine says why the plugin would refuse args ("" when it
// takes them).
func parsePluginLine(args []string) string {
	c, rest, err := newPluginCommand().Find(args)
	if err != nil {
		return err.Error()
	}
	err = c.ParseFlags(rest)
	if errors.Is(err, pflag.ErrHelp) {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	if c.RunE == nil && c.Run == nil {
		return "not a command that runs: " + c.CommandPath()
	}
	if c.Args != nil {
		if err := c.Args(c, c.Flags().Args()); err != nil {
			return err.Error()
		}
	}
	return ""
}

// docs/operations.md opens with what a paged operator runs: one line
// each for status, logs, days, dead and report, each a whole command line
// (TestDocumentedPluginCommandsParse parses them).
func TestOperationsOpensWithThePagedCommands(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.SplitN(string(b), "\n## ", 3)
	if len(sections) < 3 || !strings.HasPrefix(sections[1], "You were paged: the five commands\n") {
		t.Fatalf("docs/operations.md does not open with \"## You were paged: the five commands\"")
	}
	first := sections[1]
	for _, cmd := range []string{"status", "logs", "days", "dead", "report"} {
		if !regexp.MustCompile("(?m)^[0-9]\\. `kubectl flightfeed " + cmd + " [^`]+` — ").MatchString(first) {
			t.Errorf("the paged section has no line running `kubectl flightfeed %s …`:\n%s", cmd, first)
		}
	}
}
