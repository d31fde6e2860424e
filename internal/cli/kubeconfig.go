package cli

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

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
