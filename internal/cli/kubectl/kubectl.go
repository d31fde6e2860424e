// Package kubectl is what the kubectl plugin takes from kubectl's own
// library, k8s.io/cli-runtime: kubectl's flags (genericclioptions) and its
// printers. Only the plugin's binary (cmd/kubectl-flightfeed) links it, and
// hands it to package cli as a cli.Kubectl: cli-runtime's flags bring
// kustomize along (about 75 packages), which the flightfeed binary, run by
// every pump pod, has no use for. It holds no command and no rule of its
// own, and must not import package cli.
package kubectl

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
)

// Flags adds kubectl's own flags (-n, --context, --kubeconfig, --as,
// --server, …) to fs, parsed the same way as by kubectl and every other
// plugin, and returns what reads them: the REST config they select (then
// $KUBECONFIG, ~/.kube/config, in-cluster) and the namespace (-n, else the
// context's).
func Flags(fs *pflag.FlagSet) func() (*rest.Config, string, error) {
	cf := genericclioptions.NewConfigFlags(true)
	cf.AddFlags(fs)
	return func() (*rest.Config, string, error) {
		cfg, err := cf.ToRESTConfig()
		if err != nil {
			return nil, "", err
		}
		ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, "", err
		}
		return cfg, ns, nil
	}
}

// PrintTable prints t with kubectl's table printer: priority-1 columns
// only when wide.
func PrintTable(w io.Writer, t *metav1.Table, wide bool) error {
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(t, w); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// PrintObject prints obj (its kind set) with kubectl's JSON printer, or
// its YAML printer when yaml.
func PrintObject(w io.Writer, yaml bool, obj runtime.Object) error {
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if yaml {
		p = &printers.YAMLPrinter{}
	}
	if err := p.PrintObj(obj, w); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
