package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command tables of the docs are the command trees: docs/plugin.md's
// "Commands" has a row for every command of the kubectl plugin and
// docs/operations.md's "Commands" one for every command of the flightfeed
// binary; every flag a row names is a flag of its command, and every flag
// of a command is named in its row — except the flags every command of a
// kind shares, which the page names once: kubectl's (-n, --context, …),
// the read API token's (--service-account, --token-file) and the log's
// (--zap-*).
func TestDocumentedFlagsAreTheCommands(t *testing.T) {
	checkCommandTable(t, "../../docs/plugin.md", newPluginCommand(), "")
	checkCommandTable(t, "../../docs/operations.md", NewRootCommand(), "flightfeed ")
}

// sharedFlags are the flags a page documents once for every command that
// has them, by group: a command has kubectl's flags when it has --as.
var sharedFlags = map[string][]string{
	"token": {"service-account", "token-file"},
	"zap":   {"zap-log-level", "zap-devel", "zap-encoder", "zap-stacktrace-level", "zap-time-encoding"},
}

// kubectlFlagNames are the flags kubectl's library (the plugin) or
// client-go's clientcmd (the binary) adds.
func kubectlFlagNames() map[string]bool {
	names := map[string]bool{}
	for _, add := range []func(*pflag.FlagSet){
		func(fs *pflag.FlagSet) { pluginKubectl.Flags(fs) },
		func(fs *pflag.FlagSet) { kubeconfigFlags(fs) },
	} {
		fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
		add(fs)
		fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	}
	return names
}

var (
	// tableRow is a row of a command table: its first cell names the
	// command in a code span.
	tableRow = regexp.MustCompile("^\\| `([^`]+)`")
	// flagMention is a flag written in a row: --name or -x, not inside a
	// word ("read-only").
	flagMention = regexp.MustCompile(`(?:^|[^A-Za-z0-9-])(--[a-z][a-z0-9-]*[a-z0-9]|-[A-Za-z])\b`)
)

func checkCommandTable(t *testing.T, page string, root *cobra.Command, prefix string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	name := strings.TrimPrefix(page, "../../")
	_, section, ok := strings.Cut(text, "\n## Commands\n")
	if !ok {
		t.Fatalf("%s has no section \"## Commands\"", name)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	outside := strings.Replace(text, section, "", 1)
	var prose strings.Builder
	rows := map[*cobra.Command][]string{}
	for _, line := range strings.Split(section, "\n") {
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			prose.WriteString(line + "\n")
			continue
		}
		use, ok := strings.CutPrefix(m[1], prefix)
		if !ok {
			continue
		}
		c := findCommand(root, strings.Fields(use))
		if c == nil {
			t.Errorf("%s: the row %q names no command of %s", name, m[1], root.Name())
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")
		// The plugin's table has a column of -o's formats.
		if len(cells) > 4 && strings.TrimSpace(cells[3]) != "" {
			line += " -o"
		}
		rows[c] = append(rows[c], line)
	}
	outside += prose.String()
	kubectl := kubectlFlagNames()
	// Shared flags are documented once on the page, when a command has
	// them.
	shared := func(group string) {
		for _, f := range sharedFlags[group] {
			if !strings.Contains(text, "--"+f) {
				t.Errorf("%s does not name --%s, which its commands share (%s flags)", name, f, group)
			}
		}
	}
	if has(root, "as") {
		shared("token")
		if !strings.Contains(outside, "kubectl's flags") {
			t.Errorf("%s does not say, outside its table, that the commands take kubectl's flags", name)
		}
	}
	if has(root, "zap-log-level") {
		shared("zap")
	}
	documented := 0
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasAvailableSubCommands() {
			return // a group of commands (get): its commands have rows
		}
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		lines, ok := rows[c]
		if !ok {
			t.Errorf("%s's command table has no row for %q", name, prefix+path)
			return
		}
		documented++
		row := strings.Join(lines, "\n")
		mentioned := map[string]bool{}
		for _, m := range flagMention.FindAllStringSubmatch(row, -1) {
			f := m[1]
			var flag *pflag.Flag
			if long, ok := strings.CutPrefix(f, "--"); ok {
				flag = c.Flags().Lookup(long)
				if flag == nil {
					flag = c.InheritedFlags().Lookup(long)
				}
			} else {
				flag = c.Flags().ShorthandLookup(f[1:])
			}
			if flag == nil {
				t.Errorf("%s: the row of %q names %s, which %q does not take", name, prefix+path, f, c.CommandPath())
				continue
			}
			mentioned[flag.Name] = true
		}
		takesKubectl := c.Flags().Lookup("as") != nil
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" || mentioned[f.Name] {
				return
			}
			if takesKubectl && (kubectl[f.Name] || slices.Contains(sharedFlags["token"], f.Name)) {
				return
			}
			if slices.Contains(sharedFlags["zap"], f.Name) {
				return
			}
			t.Errorf("%s: the row of %q does not name its flag --%s (%s)", name, prefix+path, f.Name, f.Usage)
		})
	}
	walk(root)
	if documented < 10 {
		t.Fatalf("%s: only %d commands found in the table: the scan is broken", name, documented)
	}
}

// findCommand is the command the leading words of use name (its
// arguments and flags follow them), or nil.
func findCommand(root *cobra.Command, use []string) *cobra.Command {
	c := root
	for _, w := range use {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == w {
				next = sub
			}
		}
		if next == nil {
			break
		}
		c = next
	}
	if c == root {
		return nil
	}
	return c
}

// has says whether a command of the tree takes the flag.
func has(root *cobra.Command, flag string) bool {
	if root.Flags().Lookup(flag) != nil {
		return true
	}
	return slices.ContainsFunc(root.Commands(), func(c *cobra.Command) bool { return has(c, flag) })
}
