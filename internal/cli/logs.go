package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/feednames"
)

// pumpContainer is the container of a pump pod that runs the pump.
const pumpContainer = "pump"

// newLogSource connects to the API server for pod logs; tests replace it
// with a fake clientset (envtest has no kubelet to serve logs).
var newLogSource = func(cfg *rest.Config) (kubernetes.Interface, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the API server %s: %w", cfg.Host, err)
	}
	return kube, nil
}

func newLogsCommand(m mode) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs NAME [--all-pods] [-f] [--tail N] [--since D]",
		Short: "Print the logs of a FlightFeed's leading pump pod (--all-pods: of every pump pod)",
		Long: `logs prints the log of the pump pod that holds the feed NAME's Lease (the
leader, which runs the pump; the Lease is flightfeed.<namespace>.<name> in
the feed's namespace). --all-pods prints the log of every pump pod of the
feed (the pods of its Deployment <NAME>-pump, standbys too), each line
prefixed with [POD]. -f follows the logs until interrupted; --tail N prints
only the last N lines of each pod; --since D only what was logged in the
last D (5m, 1h).

It needs get on flightfeeds and leases, list on pods and deployments
(--all-pods), and get on pods/log in the feed's namespace.`,
		Example: examples(m,
			"logs pek -n airport-pek",
			"logs pek -n airport-pek --all-pods -f --tail 100",
			"logs airport-pek/pek --since 15m"),
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	cf := kubeFlags(cmd, m)
	cmd.ValidArgsFunction = completeFeedNames(cf)
	allPods := f.Bool("all-pods", false, "print the logs of every pump pod of the feed, each line prefixed with [POD]")
	follow := f.BoolP("follow", "f", false, "follow the logs until interrupted")
	tail := f.Int64("tail", -1, "the last N lines of each pod's log (-1: all)")
	since := f.Duration("since", 0, "only what was logged in the last D (5m, 1h; 0: all)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *tail < -1 {
			return usageError{fmt.Errorf("--tail %d: must be -1 (all) or more", *tail)}
		}
		if *since < 0 {
			return usageError{fmt.Errorf("--since %s: must not be negative", *since)}
		}
		cfg, key, c, err := cf.feed(args[0])
		if err != nil {
			return err
		}
		pods, err := selectPumpPods(cmd.Context(), c, key, *allPods)
		if err != nil {
			return err
		}
		kube, err := newLogSource(cfg)
		if err != nil {
			return err
		}
		opts := corev1.PodLogOptions{Container: pumpContainer, Follow: *follow}
		if *tail >= 0 {
			opts.TailLines = ptr.To(*tail)
		}
		if *since > 0 {
			opts.SinceSeconds = ptr.To(int64(max(*since/time.Second, 1)))
		}
		return streamPodLogs(cmd.Context(), kube, key.Namespace, pods, opts, *allPods, cmd.OutOrStdout())
	}
	return cmd
}

// selectPumpPods names the pump pods of the feed key whose logs are
// wanted: the pod holding the feed's Lease, or with all every pod of the
// feed's pump Deployment (by its selector), sorted.
func selectPumpPods(ctx context.Context, c client.Reader, key types.NamespacedName, all bool) ([]string, error) {
	var ff v1alpha1.FlightFeed
	if err := c.Get(ctx, key, &ff); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, usageError{fmt.Errorf("FlightFeed %s not found", key)}
		}
		return nil, fmt.Errorf("read FlightFeed %s: %w", key, err)
	}
	if all {
		return allPumpPods(ctx, c, key)
	}
	lease, err := findLease(ctx, c, key, "")
	if err != nil {
		return nil, err
	}
	holder := ""
	if lease != nil {
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	if holder == "" {
		return nil, fmt.Errorf("no pump pod of %s holds its Lease (no leader): see every pump pod's log with --all-pods", key)
	}
	var pod corev1.Pod
	if err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: holder}, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Lease of %s names %s, which is no pod of namespace %s (a pump of an older release inside the operator, or a pod gone since): see every pump pod's log with --all-pods",
				key, holder, key.Namespace)
		}
		return nil, fmt.Errorf("read the leading pump pod %s/%s: %w", key.Namespace, holder, err)
	}
	return []string{holder}, nil
}

// allPumpPods lists the pods of the feed's pump Deployment by the
// Deployment's selector (the pump's pod labels when the Deployment is not
// there, as while the operator is still to create it).
func allPumpPods(ctx context.Context, c client.Reader, key types.NamespacedName) ([]string, error) {
	sel := labels.SelectorFromSet(feednames.PodLabels(key.Name))
	var dep appsv1.Deployment
	switch err := c.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: feednames.Pump(key.Name)}, &dep); {
	case err == nil && dep.Spec.Selector != nil:
		s, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("the selector of Deployment %s/%s: %w", key.Namespace, dep.Name, err)
		}
		sel = s
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read the pump Deployment of %s: %w", key, err)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list the pump pods of %s: %w", key, err)
	}
	names := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s has no pump pods (Deployment %s/%s, pods %s)", key, key.Namespace, feednames.Pump(key.Name), sel)
	}
	slices.Sort(names)
	return names, nil
}

// streamPodLogs copies the logs of pods to w, each line prefixed with
// "[POD] " when prefix. Without Follow the pods are printed one after the
// other; with it, all at once, line by line, until ctx ends or every
// stream does.
func streamPodLogs(ctx context.Context, kube kubernetes.Interface, ns string, pods []string, opts corev1.PodLogOptions, prefix bool, w io.Writer) error {
	var mu sync.Mutex
	copyPod := func(pod string) error {
		o := opts
		stream, err := kube.CoreV1().Pods(ns).GetLogs(pod, &o).Stream(ctx)
		if err != nil {
			return fmt.Errorf("read the log of pod %s/%s: %w", ns, pod, err)
		}
		defer func() { _ = stream.Close() }()
		r := bufio.NewReader(stream)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				if !strings.HasSuffix(line, "\n") {
					line += "\n"
				}
				if prefix {
					line = "[" + pod + "] " + line
				}
				mu.Lock()
				_, werr := io.WriteString(w, line)
				mu.Unlock()
				if werr != nil {
					return fmt.Errorf("write output: %w", werr)
				}
			}
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil && ctx.Err() != nil:
				return nil
			case err != nil:
				return fmt.Errorf("read the log of pod %s/%s: %w", ns, pod, err)
			}
		}
	}
	if !opts.Follow {
		for _, pod := range pods {
			if err := copyPod(pod); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() { errs[i] = copyPod(pod) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
