package serving

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// APIServerReachable is a readiness check that passes while the API server
// answers /version.
func APIServerReachable(kube kubernetes.Interface) func(*http.Request) error {
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
			return fmt.Errorf("API server unreachable: %w", err)
		}
		return nil
	}
}

// RestConfig is cfg when set, else the kubeconfig file at path, else
// controller-runtime's search ($KUBECONFIG, in-cluster, ~/.kube/config).
func RestConfig(cfg *rest.Config, path string) (*rest.Config, error) {
	if cfg != nil {
		return cfg, nil
	}
	if path != "" {
		c, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find the cluster: %w", err)
	}
	return c, nil
}

// Scheme is the API scheme both managers and the CLI use: the built-in
// types and the FlightFeed API.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
