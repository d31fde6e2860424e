package feedobjects

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// The rendered template is written into the Deployment when it differs
// from what the Deployment runs — never because the API server filled in
// its defaults, always when the rendering changed or the template was
// edited by hand.
func TestSetTemplate(t *testing.T) {
	want := render(testFeed(nil), testDefaults).Deployment.Spec.Template
	written := &appsv1.Deployment{}
	SetTemplate(written, want)
	hash := written.Annotations[AnnotationTemplateHash]
	if hash == "" || written.Spec.Template.Annotations[AnnotationGeneration] != "7" {
		t.Fatalf("a new Deployment: annotations %v, template %v", written.Annotations, written.Spec.Template.Annotations)
	}
	// As the API server stores it: its defaults filled in.
	stored := func() *appsv1.Deployment {
		d := written.DeepCopy()
		c := &d.Spec.Template.Spec.Containers[0]
		c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", corev1.TerminationMessageReadFile
		d.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
		return d
	}
	for _, tc := range []struct {
		name    string
		dep     *appsv1.Deployment
		want    corev1.PodTemplateSpec
		written bool
	}{
		{"the same rendering, the server's defaults added", stored(), want, false},
		{"edited by hand", func() *appsv1.Deployment {
			d := stored()
			d.Spec.Template.Spec.Containers[0].Image = "registry.example/other:6.6.6"
			return d
		}(), want, true},
		{"written from another rendering", func() *appsv1.Deployment {
			d := stored()
			d.Annotations[AnnotationTemplateHash] = "0123"
			return d
		}(), want, true},
		{"a new rendering (the next generation)", stored(),
			render(testFeed(func(ff *v1alpha1.FlightFeed) { ff.Generation = 8 }), testDefaults).Deployment.Spec.Template, true},
	} {
		before := tc.dep.Spec.Template.DeepCopy()
		SetTemplate(tc.dep, tc.want)
		switch {
		case !tc.written && !equalTemplates(tc.dep.Spec.Template, *before):
			t.Errorf("%s: the template was written", tc.name)
		case tc.written && !equalTemplates(tc.dep.Spec.Template, tc.want):
			t.Errorf("%s: the template was not written", tc.name)
		case tc.dep.Annotations[AnnotationTemplateHash] != templateHash(tc.want):
			t.Errorf("%s: hash %q, want the rendering's", tc.name, tc.dep.Annotations[AnnotationTemplateHash])
		}
	}
}

func equalTemplates(a, b corev1.PodTemplateSpec) bool { return templateHash(a) == templateHash(b) }

// Every feed's pump ServiceAccount is a subject of the auth-delegator
// binding, sorted, except a feed being deleted.
func TestAuthDelegatorSubjects(t *testing.T) {
	feed := func(ns, name string, deleting bool) v1alpha1.FlightFeed {
		f := v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if deleting {
			f.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return f
	}
	got := AuthDelegatorSubjects([]v1alpha1.FlightFeed{feed("ground", "pvg", false), feed("airports", "pvg", false),
		feed("airports", "can", true), feed("airports", "pek", false)})
	var names []string
	for _, s := range got {
		if s.Kind != "ServiceAccount" || s.APIGroup != "" {
			t.Errorf("subject %+v", s)
		}
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if want := []string{"airports/pek-pump", "airports/pvg-pump", "ground/pvg-pump"}; !slices.Equal(names, want) {
		t.Errorf("subjects %q, want %q", names, want)
	}
	if got := AuthDelegatorSubjects([]v1alpha1.FlightFeed{feed("airports", "can", true)}); len(got) != 0 {
		t.Errorf("only a feed being deleted: %+v, want none", got)
	}
}
