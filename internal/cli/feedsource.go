package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/serving"
)

// feedLoader returns the feed a command's flags name (see feedSource and
// configFlag).
type feedLoader func(context.Context) (*config.Feed, error)

// feedSource adds --config, or --kubeconfig with --feed NAMESPACE/NAME, and
// returns the feed they name: read from the file, or the FlightFeed in the
// cluster resolved as the manager resolves it (defaults, validation, the
// DSNs from its Secrets). Without --kubeconfig, --feed uses $KUBECONFIG or
// ~/.kube/config.
func feedSource(cmd *cobra.Command) feedLoader {
	path := cmd.Flags().String("config", "", "feed configuration file (YAML, the FlightFeed spec's shape with inline DSNs)")
	kubeconfig := cmd.Flags().String("kubeconfig", "", "kubeconfig of the cluster that runs the feed (with --feed)")
	name := cmd.Flags().String("feed", "", "the FlightFeed as NAMESPACE/NAME, resolved in the cluster with its Secrets")
	return func(ctx context.Context) (*config.Feed, error) {
		switch {
		case *path != "" && (*name != "" || *kubeconfig != ""):
			return nil, usageError{errors.New("give either --config or --feed (with --kubeconfig), not both")}
		case *path != "":
			feed, err := config.Load(*path)
			if err != nil {
				return nil, usageError{err}
			}
			return feed, nil
		case *name == "":
			return nil, usageError{errors.New("--config or --feed NAMESPACE/NAME is required")}
		}
		ns, n, ok := strings.Cut(*name, "/")
		if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return nil, usageError{fmt.Errorf("--feed %q: must be NAMESPACE/NAME", *name)}
		}
		cfg, _, err := loadKubeconfig(*kubeconfig, "", ns)
		if err != nil {
			return nil, err
		}
		scheme, err := serving.Scheme()
		if err != nil {
			return nil, err
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return nil, fmt.Errorf("connect to the cluster: %w", err)
		}
		var ff v1alpha1.FlightFeed
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &ff); err != nil {
			return nil, fmt.Errorf("FlightFeed %s: %w", *name, err)
		}
		feed, err := pumppod.ResolveFeed(ctx, c, &ff)
		var ce *pumppod.ConfigError
		if errors.As(err, &ce) {
			return nil, usageError{fmt.Errorf("FlightFeed %s: %w", *name, err)}
		}
		if err != nil {
			return nil, fmt.Errorf("FlightFeed %s: %w", *name, err)
		}
		return feed, nil
	}
}

// loadKubeconfig loads the kubeconfig at path (empty: $KUBECONFIG or
// ~/.kube/config) with the named context (empty: the current one). The
// namespace is ns, or the context's when ns is empty.
func loadKubeconfig(path, kubeContext, ns string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := kc.ClientConfig()
	if err != nil {
		return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	if ns == "" {
		if ns, _, err = kc.Namespace(); err != nil {
			return nil, "", usageError{fmt.Errorf("kubeconfig: %w", err)}
		}
	}
	return cfg, ns, nil
}
