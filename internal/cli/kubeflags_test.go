package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// kubeFlagsOf is the kubectl flags a command of m gets, and the command.
func kubeFlagsOf(m mode) (*cobra.Command, *kubeFlagSet) {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	return cmd, kubeFlags(cmd, m)
}

// The flightfeed binary takes kubectl's flags without kubectl's library:
// every flag the plugin's commands take (kubectl's own, from cli-runtime)
// it takes too, with the same shorthand, type and default, save
// --cache-dir, the folder of a discovery cache neither keeps.
func TestBinaryTakesKubectlsFlags(t *testing.T) {
	type flag struct{ Shorthand, Type, Default string }
	flags := func(m mode) map[string]flag {
		_, k := kubeFlagsOf(m)
		out := map[string]flag{}
		k.fs.VisitAll(func(f *pflag.Flag) {
			out[f.Name] = flag{f.Shorthand, f.Value.Type(), f.DefValue}
		})
		return out
	}
	plugin, binary := flags(pluginMode(pluginKubectl)), flags(binaryMode)
	delete(plugin, "cache-dir")
	if len(plugin) < 15 {
		t.Fatalf("kubectl's library registered only %d flags: %v", len(plugin), plugin)
	}
	if diff := cmp.Diff(plugin, binary); diff != "" {
		t.Errorf("kubectl's flags (-) and the flightfeed binary's (+) differ:\n%s", diff)
	}
}

// And it reads them the same way: the same command line selects the same
// API server, user, impersonation, TLS, timeout and namespace.
func TestBinaryReadsKubectlsFlagsAlike(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster: {server: "https://one.example:6443", insecure-skip-tls-verify: true}
- name: c2
  cluster: {server: "https://two.example:6443", tls-server-name: two.internal, insecure-skip-tls-verify: true}
users:
- name: u1
  user: {token: token-one}
- name: u2
  user: {token: token-two}
contexts:
- name: one
  context: {cluster: c1, user: u1, namespace: ns-one}
- name: two
  context: {cluster: c2, user: u2}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	for _, args := range [][]string{
		{"--kubeconfig", kubeconfig},
		{"--kubeconfig", kubeconfig, "--context", "two"},
		{"--kubeconfig", kubeconfig, "-n", "ops"},
		{"--kubeconfig", kubeconfig, "--cluster", "c2", "--user", "u2", "--namespace", "ops"},
		{"--kubeconfig", kubeconfig, "-s", "https://three.example", "--token", "t3", "--request-timeout", "7s"},
		{"--kubeconfig", kubeconfig, "--as", "alice", "--as-group", "ops", "--as-group", "dev", "--as-uid", "42", "--as-user-extra", "team=a", "--as-user-extra", "team=b"},
		{"--kubeconfig", kubeconfig, "--tls-server-name", "x.internal", "--disable-compression", "--proxy-url", "http://proxy.example:3128"},
	} {
		type selected struct {
			Host, BearerToken, ServerName, Namespace string
			Insecure, DisableCompression             bool
			Impersonate                              rest.ImpersonationConfig
			Timeout                                  time.Duration
			Proxy                                    string
		}
		read := func(m mode) selected {
			cmd, k := kubeFlagsOf(m)
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			cfg, ns, err := k.restConfig()
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			s := selected{Host: cfg.Host, BearerToken: cfg.BearerToken, ServerName: cfg.ServerName, Namespace: ns,
				Insecure: cfg.Insecure, DisableCompression: cfg.DisableCompression, Impersonate: cfg.Impersonate, Timeout: cfg.Timeout}
			if cfg.Proxy != nil {
				u, err := cfg.Proxy(nil)
				if err != nil {
					t.Fatal(err)
				}
				s.Proxy = u.String()
			}
			return s
		}
		plugin, binary := read(pluginMode(pluginKubectl)), read(binaryMode)
		if diff := cmp.Diff(plugin, binary); diff != "" {
			t.Errorf("%s: kubectl's reading (-) and the flightfeed binary's (+) differ:\n%s", strings.Join(args, " "), diff)
		}
	}
}

// The flightfeed binary lays tables out as kubectl's printer does, byte
// for byte: wide or not, with numbers, empty and missing cells, long cells,
// line breaks and escape characters in cells.
func TestBinaryTablesAreKubectls(t *testing.T) {
	long := strings.Repeat("x", 130)
	tables := map[string][][]any{
		"one row":       {{"1", "2026-09-09 10:00:00", "FLOP/ADFT", "DEAD", "RECS_MISMATCH", 3, "note", "-", "-", "2026-09-09 10:00:01"}},
		"numbers":       {{int64(1), 2, 3.5, true, "e", "f", "g", "h", "i", "j"}, {int64(1234567890123), 0, 0.25, false, "", "", "", "", "", ""}},
		"short and nil": {{"a", nil, "c"}, {"", "b", nil, "d", "e", "f", "g", "h", "i", "j"}},
		"long":          {{long, "b", "c", "d", "e", "f", long, "h", "i", long}},
		"line breaks":   {{"first\nsecond", "a\rb", "c\fd", "e", "f", "g", "h", "i", "j", "k\nl"}},
		"escapes":       {{"\x1b[31mred\x1b[0m", "b", "c", "d", "e", "f", "g", "h", "i", "\x1b]0;title\a"}},
		"more cells":    {{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "beyond", "the columns"}},
		"many rows":     manyRows(250),
	}
	for name, rows := range tables {
		for _, wide := range []bool{false, true} {
			table := func() *metav1.Table {
				tb := columns("ID", "RECEIVED", "TYPE", "STATUS", "REASON", "ATTEMPTS", "NOTE", "CONFLICTS", "REPLAYED", "UPDATED+")
				for _, r := range rows {
					tb.Rows = append(tb.Rows, metav1.TableRow{Cells: r})
				}
				return tb
			}
			var kubectl, binary bytes.Buffer
			if err := pluginKubectl.PrintTable(&kubectl, table(), wide); err != nil {
				t.Fatal(err)
			}
			if err := printTable(&binary, binaryMode, table(), wide); err != nil {
				t.Fatal(err)
			}
			if kubectl.String() != binary.String() {
				t.Errorf("%s (wide %v): kubectl prints\n%q\nthe flightfeed binary\n%q", name, wide, kubectl.String(), binary.String())
			}
		}
	}
}

// manyRows are n rows whose cells widen late, past kubectl's first flush.
func manyRows(n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{i, strings.Repeat("w", i/10), "t", "s", "r", i * i, "n", "c", "p", "u"}
	}
	return rows
}
