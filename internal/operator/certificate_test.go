package operator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/feednames"
	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/operator"
	"github.com/flightfeed/flightfeed/internal/testsupport/await"
)

// installCertificateCRD stands in for cert-manager's CRDs: the kind
// certificates.cert-manager.io/v1 served, any spec kept (the API server
// stores what the operator writes; no cert-manager issues it here).
func installCertificateCRD(e *env) {
	e.t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "certificates.cert-manager.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cert-manager.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "certificates", Singular: "certificate", Kind: "Certificate", ListKind: "CertificateList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := e.c.Create(e.t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	await.Eventually(e.t, "the Certificate CRD established", waitLong, func() (bool, string) {
		var got apiextensionsv1.CustomResourceDefinition
		if err := e.get(types.NamespacedName{Name: crd.Name}, &got); err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", got.Status.Conditions)
	})
}

// With pump.certManager on, the operator has cert-manager issue each
// feed's pump pods a certificate (a Certificate owned by the feed, in its
// namespace) and the pods mount its Secret for the read API and metrics;
// turned off, the Certificate goes and the pods serve the self-signed one.
func TestPumpCertificateFollowsTheDefaults(t *testing.T) {
	withIssuer := func(o *operator.Options) {
		o.Pump.Certificate = &feedobjects.PumpCertificate{IssuerRef: feedobjects.IssuerRef{Name: "corp-ca"}}
	}
	e := newNamespace(t)
	installCertificateCRD(e)
	pk := types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}
	ck := types.NamespacedName{Namespace: e.ns, Name: feednames.PumpTLS("pek")}
	cert := func() (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cert-manager.io/v1")
		u.SetKind("Certificate")
		return u, e.get(ck, u)
	}
	mounted := func(d *appsv1.Deployment) bool {
		p, c := d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0]
		return len(p.Volumes) == 1 && p.Volumes[0].Secret != nil && p.Volumes[0].Secret.SecretName == ck.Name &&
			len(c.VolumeMounts) == 1 && slices.Contains(c.Args, "--api-cert-dir") && slices.Contains(c.Args, "--metrics-cert-dir")
	}

	// An issuer named: the Certificate, and the pods mounting its Secret.
	stop := e.start(withIssuer)
	t.Cleanup(stop)
	ff := e.feed("pek", nil)
	await.Eventually(t, "the Certificate and the pods mounting its Secret", waitLong, func() (bool, string) {
		c, err := cert()
		if err != nil {
			return false, err.Error()
		}
		var d appsv1.Deployment
		if err := e.get(pk, &d); err != nil {
			return false, err.Error()
		}
		names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
		issuer, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
		refs := c.GetOwnerReferences()
		// The feed's Service names, no name shared with another pump.
		return mounted(&d) && issuer == "corp-ca" && slices.Equal(names, []string{pk.Name + "." + e.ns + ".svc", pk.Name + "." + e.ns + ".svc.cluster.local"}) &&
				len(refs) == 1 && refs[0].UID == ff.UID,
			fmt.Sprintf("mounted %v, issuer %q, names %q, owners %+v", mounted(&d), issuer, names, refs)
	})

	// The operator restarted without an issuer (the chart's value turned
	// off): the Certificate goes, the pods serve the self-signed one.
	stop()
	t.Cleanup(e.start(nil))
	await.Eventually(t, "no Certificate, no mount", waitLong, func() (bool, string) {
		_, cerr := cert()
		var d appsv1.Deployment
		if err := e.get(pk, &d); err != nil {
			return false, err.Error()
		}
		return apierrors.IsNotFound(cerr) && !mounted(&d), fmt.Sprintf("certificate: %v, mounted %v", cerr, mounted(&d))
	})
}

// A reconcile that renders what the Deployment runs writes nothing: the
// API server's defaults in the stored pod template used to make every
// reconcile (one per Deployment status change) PUT the template back
// unchanged. A changed rendering, or a hand edit of a field the operator
// sets, is still written.
func TestUnchangedDeploymentIsNotWrittenBack(t *testing.T) {
	e := newNamespace(t)
	ff := e.feed("pek", nil)
	var updates []string
	ww, err := client.NewWithWatch(restCfg, client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok {
				updates = append(updates, obj.GetName())
			}
			return cl.Update(ctx, obj, opts...)
		},
	})
	r := &controllers.FlightFeedReconciler{Client: c, APIReader: e.c,
		Defaults: feedobjects.PumpDefaults{Image: "flightfeed:test", NodeSelector: map[string]string{"pool": "a"}}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ff)}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	reconcile() // creates
	updates = nil
	reconcile()
	reconcile()
	if len(updates) != 0 {
		t.Fatalf("reconciles of an unchanged feed updated the Deployment %d times", len(updates))
	}
	pk := types.NamespacedName{Namespace: e.ns, Name: feednames.Pump("pek")}

	// A hand edit of a field the operator sets is put back.
	var dep appsv1.Deployment
	if err := e.get(pk, &dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = "somebody-else:1"
	if err := e.c.Update(t.Context(), &dep); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if err := e.get(pk, &dep); err != nil || dep.Spec.Template.Spec.Containers[0].Image != "flightfeed:test" {
		t.Fatalf("hand-edited image not put back: %q (%v)", dep.Spec.Template.Spec.Containers[0].Image, err)
	}

	// A rendering that drops a field (the defaults' node selector gone) is
	// written, though what it still sets is all in the stored template.
	r.Defaults.NodeSelector = nil
	updates = nil
	reconcile()
	if err := e.get(pk, &dep); err != nil || len(dep.Spec.Template.Spec.NodeSelector) != 0 || len(updates) != 1 {
		t.Fatalf("node selector %v after it left the defaults (%d updates, %v)", dep.Spec.Template.Spec.NodeSelector, len(updates), err)
	}
}
