package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// Kubectl is what the kubectl plugin's commands take from kubectl's own
// library (k8s.io/cli-runtime, wrapped by package internal/cli/kubectl,
// which only the plugin's binary links): kubectl's flags and printers. The
// flightfeed binary does without that library and the kustomize it brings
// along, which a pump pod has no use for: its commands take the same flags
// through client-go (kubeconfigFlags) and print their tables themselves
// (printTable).
type Kubectl struct {
	// Flags adds kubectl's flags to fs and returns what reads them: the
	// REST config and the namespace they select.
	Flags func(fs *pflag.FlagSet) func() (*rest.Config, string, error)
	// PrintTable prints a table as kubectl get does; priority-1 columns
	// only when wide.
	PrintTable func(w io.Writer, t *metav1.Table, wide bool) error
	// PrintObject prints an object (its kind set) as JSON, or YAML when
	// yaml.
	PrintObject func(w io.Writer, yaml bool, obj runtime.Object) error
}

// mode is which command tree is built: the flightfeed binary's (every
// command, docs/operations.md), or the kubectl plugin's (only what a user of a running
// feed needs, with kubectl's flags and printers).
type mode struct {
	kubectl *Kubectl // nil: the flightfeed binary
}

// binaryMode is the flightfeed binary's tree.
var binaryMode = mode{}

// pluginMode is the kubectl plugin's tree, with k's flags and printers.
func pluginMode(k Kubectl) mode { return mode{kubectl: &k} }

// plugin says whether this is the kubectl plugin's tree.
func (m mode) plugin() bool { return m.kubectl != nil }

// kubeFlagSet is kubectl's flags on one command.
type kubeFlagSet struct {
	fs   *pflag.FlagSet
	load func() (*rest.Config, string, error)
}

// kubeFlags adds kubectl's own flags (-n, --context, --kubeconfig, --as,
// --server, …) to cmd: the same flags, parsed the same way, as kubectl and
// every other plugin, rather than a hand-written subset: kubectl's own
// library in the plugin, client-go's clientcmd (which that library wraps)
// in the flightfeed binary.
func kubeFlags(cmd *cobra.Command, m mode) *kubeFlagSet {
	k := &kubeFlagSet{fs: pflag.NewFlagSet("kubectl", pflag.ContinueOnError)}
	if m.plugin() {
		k.load = m.kubectl.Flags(k.fs)
	} else {
		k.load = kubeconfigFlags(k.fs)
	}
	cmd.Flags().AddFlagSet(k.fs)
	return k
}

// changed says whether any of kubectl's flags was given on the command
// line (cmd's flag set shares the flags themselves).
func (k *kubeFlagSet) changed() bool {
	changed := false
	k.fs.VisitAll(func(f *pflag.Flag) { changed = changed || f.Changed })
	return changed
}

// restConfig is the kubeconfig the flags select (then $KUBECONFIG,
// ~/.kube/config, in-cluster) and the namespace: -n, else the context's.
func (k *kubeFlagSet) restConfig() (*rest.Config, string, error) {
	cfg, ns, err := k.load()
	if err != nil {
		return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	return cfg, ns, nil
}

// feed is what a command about one FlightFeed starts from: the kubeconfig
// the flags select, the feed arg names (NAME in the namespace, or
// NAMESPACE/NAME) and a client for the kinds status reads.
func (k *kubeFlagSet) feed(arg string) (*rest.Config, types.NamespacedName, client.Client, error) {
	cfg, ns, err := k.restConfig()
	if err != nil {
		return nil, types.NamespacedName{}, nil, err
	}
	key, err := parseFeedKey(arg, ns)
	if err != nil {
		return nil, key, nil, usageError{err}
	}
	c, err := statusClient(cfg)
	if err != nil {
		return nil, key, nil, err
	}
	return cfg, key, c, nil
}

// kubeconfigFlags are kubectl's flags on the flightfeed binary, bound
// through client-go's clientcmd as kubectl's own library binds them: the
// same names, shorthands and meaning (a test holds the two to each other),
// except --cache-dir, the directory of a discovery cache these commands
// never keep.
func kubeconfigFlags(fs *pflag.FlagSet) func() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	fs.StringVar(&rules.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// kubectl: -s is --server; no basic authentication.
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(overrides, fs, names)
	userExtra := fs.StringArray("as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	return func() (*rest.Config, string, error) {
		if len(*userExtra) > 0 {
			overrides.AuthInfo.ImpersonateUserExtra = map[string][]string{}
			for _, extra := range *userExtra {
				if key, value, ok := strings.Cut(extra, "="); ok {
					overrides.AuthInfo.ImpersonateUserExtra[key] = append(overrides.AuthInfo.ImpersonateUserExtra[key], value)
				}
			}
		}
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
		cfg, err := loader.ClientConfig()
		if err != nil {
			return nil, "", err
		}
		ns, _, err := loader.Namespace()
		if err != nil {
			return nil, "", err
		}
		return cfg, ns, nil
	}
}

// feedArgument is the feed a command names: the positional NAME (or
// NS/NAME), or --feed on the flightfeed binary. Empty: none was named.
func feedArgument(args []string, feedFlag string) (string, error) {
	switch {
	case len(args) > 0 && feedFlag != "":
		return "", usageError{fmt.Errorf("name the feed once: NAME %q or --feed %q, not both", args[0], feedFlag)}
	case len(args) > 0:
		return args[0], nil
	}
	return feedFlag, nil
}

// completeFeedNames is a ValidArgsFunction completing the first positional
// argument with the names of the FlightFeeds in the namespace the flags
// select, read from the API server.
func completeFeedNames(cf *kubeFlagSet) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := feedNames(cmd.Context(), cf)
		if err != nil {
			cobra.CompErrorln(err.Error())
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// feedNames lists the FlightFeeds of the flags' namespace, sorted.
func feedNames(ctx context.Context, cf *kubeFlagSet) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, ns, err := cf.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := statusClient(cfg)
	if err != nil {
		return nil, err
	}
	var list v1alpha1.FlightFeedList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list FlightFeeds in %s: %w", ns, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, ff := range list.Items {
		names = append(names, ff.Name)
	}
	slices.Sort(names)
	return names, nil
}

// examples renders command lines as a command's Example, each prefixed
// with the name the binary runs as (kubectl flightfeed in the plugin).
func examples(m mode, lines ...string) string {
	prefix := "  flightfeed "
	if m.plugin() {
		prefix = "  kubectl flightfeed "
	}
	return prefix + strings.Join(lines, "\n"+prefix)
}
