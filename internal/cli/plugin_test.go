package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// The kubectl plugin's command tree, walked: only the user commands, each
// with an Example, kubectl's flags, -o json|yaml|wide where it prints a
// table, and the feed as a positional NAME completed from the API server.
func TestPluginCommandTree(t *testing.T) {
	type want struct {
		args    string // the positional arguments Use names, after the command path
		name    bool   // NAME is positional and completed with feed names
		outputs []string
		file    bool // -o names the file written, not a format
	}
	table := []string{outJSON, outYAML, outWide}
	wants := map[string]want{
		"status":     {args: "[NAME]", name: true, outputs: []string{outJSON, outYAML, outWide}},
		"logs":       {args: "NAME", name: true},
		"days":       {args: "NAME", name: true, outputs: table},
		"dead":       {args: "NAME", name: true, outputs: table},
		"parked":     {args: "NAME", name: true, outputs: table},
		"replay":     {args: "NAME", name: true},
		"rerequest":  {args: "NAME", name: true},
		"get":        {args: "flight"},
		"get flight": {args: "NAME FLID", name: true, outputs: []string{outJSON, outYAML}},
		"export":     {args: "NAME", name: true},
		"ref":        {args: "NAME", name: true, outputs: table},
		"history":    {args: "NAME FLID", name: true, outputs: table},
		"verify":     {args: "NAME", name: true, outputs: []string{outJSON, outYAML}},
		"version":    {outputs: []string{outJSON, outYAML}},
		"report":     {args: "NAME", name: true, file: true},
	}
	root := newPluginCommand()
	seen := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), root.Name()+" ")
			seen[path] = true
			w, ok := wants[path]
			if !ok {
				t.Errorf("the plugin shows %q, which is not a user command", path)
				continue
			}
			if strings.TrimSpace(sub.Example) == "" {
				t.Errorf("%s: no Example", path)
			}
			for _, line := range strings.Split(strings.TrimSpace(sub.Example), "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "kubectl flightfeed "+path) {
					t.Errorf("%s: example %q does not run kubectl flightfeed %s", path, line, path)
				}
			}
			for _, flag := range []string{"namespace", "context", "kubeconfig"} {
				if sub.Flags().Lookup(flag) == nil {
					t.Errorf("%s: no --%s", path, flag)
				}
			}
			if f := sub.Flags().ShorthandLookup("n"); f == nil || f.Name != "namespace" {
				t.Errorf("%s: -n is not --namespace", path)
			}
			for _, flag := range []string{"config", "feed"} {
				if sub.Flags().Lookup(flag) != nil {
					t.Errorf("%s: the plugin offers --%s (the flightfeed binary's, not a kubectl user's)", path, flag)
				}
			}
			if got := strings.TrimPrefix(sub.Use, sub.Name()); w.args != "" && !strings.HasPrefix(strings.TrimSpace(got), w.args) {
				t.Errorf("%s: Use %q does not start with its arguments %q", path, sub.Use, w.args)
			}
			if w.name {
				if sub.ValidArgsFunction == nil {
					t.Errorf("%s: NAME is not completed", path)
				}
				if err := sub.Args(sub, nil); w.args != "[NAME]" && err == nil {
					t.Errorf("%s: runs without NAME", path)
				}
				if err := sub.Args(sub, strings.Fields(strings.Repeat("x ", len(strings.Fields(w.args))))); err != nil {
					t.Errorf("%s: refuses %s: %v", path, w.args, err)
				}
			}
			if w.file {
				if f := sub.Flags().Lookup("output"); f == nil || f.Shorthand != "o" || f.Value.Type() != "string" {
					t.Errorf("%s: no -o FILE", path)
				}
			} else {
				checkOutputs(t, sub, path, w.outputs, len(strings.Fields(w.args)))
			}
			walk(sub)
		}
	}
	walk(root)
	for path := range wants {
		if !seen[path] {
			t.Errorf("the plugin lacks %q", path)
		}
	}
}

// checkOutputs runs cmd's -o getter through each format it should take,
// one it should not, and checks the flag is -o/--output.
func checkOutputs(t *testing.T, cmd *cobra.Command, path string, outputs []string, nargs int) {
	t.Helper()
	f := cmd.Flags().Lookup("output")
	if len(outputs) == 0 {
		if f != nil {
			t.Errorf("%s: takes -o though it prints no table or object", path)
		}
		return
	}
	if f == nil || f.Shorthand != "o" {
		t.Fatalf("%s: no -o/--output", path)
	}
	for _, o := range append(slices.Clone(outputs), "bogus") {
		// A fresh command each time: flags keep their values.
		c, _, err := newPluginCommand().Find(strings.Fields(path))
		if err != nil {
			t.Fatal(err)
		}
		err = c.ParseFlags([]string{"-o", o})
		if err == nil {
			err = c.ValidateFlagGroups()
		}
		valid := err == nil && outputValid(c, []string{"pek", "121112312"}[:nargs])
		if valid != (o != "bogus") {
			t.Errorf("%s -o %s: accepted %v", path, o, valid)
		}
	}
}

// outputValid runs the command with an impossible kubeconfig and tells
// whether it got past -o: a usage error naming -o means it did not.
func outputValid(c *cobra.Command, args []string) bool {
	c.SetContext(context.Background())
	_ = c.Flags().Set("kubeconfig", "/nonexistent/kubeconfig")
	_ = c.Flags().Set("token-file", "/nonexistent/token")
	var out bytes.Buffer
	c.SetOut(&out)
	err := c.RunE(c, args)
	return err == nil || !strings.Contains(err.Error(), "-o ")
}

// The plugin shows only its commands; the flightfeed binary keeps every
// command and has the plugin's too.
func TestPluginHelpListsNoManagerPumpOrSimulate(t *testing.T) {
	code, out, errOut := runPlugin("--help")
	if code != 0 {
		t.Fatalf("kubectl flightfeed --help: exit %d: %s", code, errOut)
	}
	for _, cmd := range []string{"manager", "pump", "simulate", "migrate", "ledger", "selftest", "completion"} {
		if strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("kubectl flightfeed --help lists %s:\n%s", cmd, out)
		}
	}
	for _, cmd := range []string{"status", "days", "dead", "parked", "replay", "rerequest", "get", "ref", "export", "version"} {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("kubectl flightfeed --help does not list %s:\n%s", cmd, out)
		}
	}
	code, all, _ := runCLI("--help")
	for _, cmd := range []string{"manager", "pump", "simulate", "migrate", "ledger", "status", "days", "dead", "parked", "replay", "rerequest", "get", "ref", "export", "version"} {
		if code != 0 || !strings.Contains(all, "\n  "+cmd+" ") {
			t.Errorf("flightfeed --help does not list %s:\n%s", cmd, all)
		}
	}
}

// flightfeed version -o json is the labels of flightfeed_build_info.
func TestVersionIsTheBuildInfoMetricsLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := pumppod.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for _, mf := range families {
		if mf.GetName() != "flightfeed_build_info" {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("flightfeed_build_info has %d series", len(mf.GetMetric()))
		}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
	}
	if len(labels) == 0 {
		t.Fatal("no flightfeed_build_info")
	}
	for _, run := range []func(...string) (int, string, string){runCLI, runPlugin} {
		code, out, errOut := run("version", "-o", "json")
		if code != 0 {
			t.Fatalf("version -o json: exit %d: %s", code, errOut)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("version -o json: %v\n%s", err, out)
		}
		if !maps(got, labels) {
			t.Errorf("version -o json = %v, flightfeed_build_info's labels = %v", got, labels)
		}
	}
	if code, out, _ := runPlugin("version"); code != 0 || !strings.Contains(out, labels["version"]) || !strings.Contains(out, labels["goversion"]) {
		t.Errorf("version: exit %d: %s", code, out)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// runPlugin runs a command line as kubectl flightfeed.
func runPlugin(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runPluginCommand(context.Background(), pluginKubectl, args, &out, &errOut)
	return code, out.String(), errOut.String()
}
