package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// mode is which command tree is built: the flightfeed binary's (every
// command, SPEC §5), or the kubectl plugin's (only what a user of a running
// feed needs).
type mode int

const (
	binaryMode mode = iota
	pluginMode
)

// kubeFlags adds kubectl's own flags (-n, --context, --kubeconfig, --as,
// --server, …) to cmd: the same flags, parsed the same way, as kubectl and
// every other plugin, rather than a hand-written subset.
func kubeFlags(cmd *cobra.Command) *genericclioptions.ConfigFlags {
	cf := genericclioptions.NewConfigFlags(true)
	cf.AddFlags(cmd.Flags())
	return cf
}

// kubeFlagChanged says whether any of kubectl's flags was given on the
// command line.
func kubeFlagChanged(cmd *cobra.Command) bool {
	changed := false
	probe := pflag.NewFlagSet("kube", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(false).AddFlags(probe)
	probe.VisitAll(func(f *pflag.Flag) {
		if cmd.Flags().Changed(f.Name) {
			changed = true
		}
	})
	return changed
}

// restConfig is the kubeconfig the flags select (then $KUBECONFIG,
// ~/.kube/config, in-cluster) and the namespace: -n, else the context's.
func restConfig(cf *genericclioptions.ConfigFlags) (*rest.Config, string, error) {
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	return cfg, ns, nil
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
func completeFeedNames(cf *genericclioptions.ConfigFlags) cobra.CompletionFunc {
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
func feedNames(ctx context.Context, cf *genericclioptions.ConfigFlags) ([]string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, ns, err := restConfig(cf)
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
	if m == pluginMode {
		prefix = "  kubectl flightfeed "
	}
	return prefix + strings.Join(lines, "\n"+prefix)
}
