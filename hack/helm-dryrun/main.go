// Command helm-dryrun starts a real kube-apiserver and etcd (envtest, from
// KUBEBUILDER_ASSETS), installs the given CRD files, waits until they are
// established, and server-side dry-run applies every object of the given
// rendered manifests, so the API server validates each against its schema.
// It exits non-zero naming the first object the server refuses.
//
//	go run ./hack/helm-dryrun -crd a.yaml -crd b.yaml rendered.yaml...
//
// hack/helm-check.sh runs it on the chart rendered with every optional
// object on.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var crds files
	flag.Var(&crds, "crd", "a CRD file to install first (repeatable)")
	flag.Parse()
	if err := run(context.Background(), crds, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "helm-dryrun:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, crds, manifests []string) (err error) {
	logf.SetLogger(logr.Discard())
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh))")
	}
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		o, err := read(m)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	// envtest installs the CRDs and waits until they are established.
	env := &envtest.Environment{
		CRDInstallOptions:        envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true},
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stop control plane: %w", stopErr)
		}
	}()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	namespaces := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || namespaces[ns] {
			continue
		}
		namespaces[ns] = true
		// default (the chart's Role for the API server's addresses) exists.
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll, client.FieldOwner("helm-check"), client.ForceOwnership); err != nil {
			return fmt.Errorf("server-side dry-run apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	fmt.Printf("helm-dryrun: the API server accepts %d objects\n", len(objs))
	return nil
}

// read decodes every non-empty document of a multi-document YAML file.
func read(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path) //nolint:gosec // a manifest named on the command line
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		o := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &o.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		objs = append(objs, o)
	}
}
