package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The CRDs an installation must have established.
var selftestCRDs = []string{"flightfeeds.flightfeed.aero", "flightfeeddays.flightfeed.aero"}

func newSelftestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "selftest [--kubeconfig K] --namespace NS --selector SEL [--probe-port 8081]",
		Short: "Check an installation: the FlightFeed CRDs are established and every manager pod answers /readyz",
		Long: `selftest is the chart's 'helm test': it checks, from the API server, that the
FlightFeed and FlightFeedDay CRDs are Established, then asks every running manager
pod the selector finds (by pod IP: no cluster DNS is needed) for /readyz on the
probe port. One line per check; exit 0 when all pass, 1 otherwise.`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	kubeconfig := f.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	namespace := f.String("namespace", "", "namespace of the manager pods (default: the kubeconfig's, in a pod its own)")
	selector := f.String("selector", "", "label selector of the manager pods (required)")
	probePort := f.Int("probe-port", 8081, "the managers' /healthz and /readyz port")
	timeout := f.Duration("timeout", 2*time.Minute, "give up after this long (the checks are retried until then)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *selector == "" {
			return usageError{errors.New("--selector is required")}
		}
		if _, err := labels.Parse(*selector); err != nil {
			return usageError{fmt.Errorf("--selector %q: %w", *selector, err)}
		}
		cfg, ns, err := loadKubeconfig(*kubeconfig, "", *namespace)
		if err != nil {
			return err
		}
		scheme := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
			if err := add(scheme); err != nil {
				return fmt.Errorf("build the client's scheme: %w", err)
			}
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("connect to the API server %s: %w", cfg.Host, err)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		defer cancel()
		out := cmd.OutOrStdout()
		// Retried: right after an install the pods may still be starting.
		var lastPassed []string
		var lastErr error
		for {
			passed, err := selftest(ctx, c, ns, *selector, *probePort)
			if err == nil {
				for _, l := range passed {
					fmt.Fprintln(out, "ok", l)
				}
				return nil
			}
			// An attempt the deadline cut short says less than the one before.
			if ctx.Err() == nil || lastErr == nil {
				lastPassed, lastErr = passed, err
			}
			if ctx.Err() != nil {
				for _, l := range lastPassed {
					fmt.Fprintln(out, "ok", l)
				}
				return fmt.Errorf("selftest failed: %w", lastErr)
			}
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}
	return cmd
}

// selftest runs the checks once: the lines of those that passed, and the
// first failure.
func selftest(ctx context.Context, c client.Reader, ns, selector string, port int) ([]string, error) {
	var ok []string
	for _, name := range selftestCRDs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, types.NamespacedName{Name: name}, &crd); err != nil {
			return ok, fmt.Errorf("CRD %s: %w", name, err)
		}
		if !crdEstablished(&crd) {
			return ok, fmt.Errorf("CRD %s is not Established", name)
		}
		ok = append(ok, "CRD "+name+" Established")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return ok, fmt.Errorf("--selector %q: %w", selector, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ok, fmt.Errorf("list manager pods in %s: %w", ns, err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		running++
		url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)) + "/readyz"
		if err := getOK(ctx, url); err != nil {
			return ok, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		ok = append(ok, fmt.Sprintf("pod %s answers /readyz", p.Name))
	}
	if running == 0 {
		return ok, fmt.Errorf("no running manager pod matches %q in %s", selector, ns)
	}
	return ok, nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// getOK gets url and wants 200.
func getOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}
