package feedobjects

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

// spec.pump.resources is bounded by the chart: the memory limit is never
// removed, values beyond the bounds are clamped, resources other than cpu,
// memory and ephemeral-storage are not taken from the spec, and every
// change is said (status.pumpPods.adjusted).
func TestPumpResourcesAreBounded(t *testing.T) {
	d, err := PumpDefaults{
		Image: "registry.example/flightfeed:1.2.3",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
		ResourceBounds: PumpResourceBounds{MaxMemory: ptr.To(resource.MustParse("2Gi")),
			MinMemory: ptr.To(resource.MustParse("64Mi")), MaxCPU: ptr.To(resource.MustParse("2"))},
	}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cases := []struct {
		name             string
		spec             *corev1.ResourceRequirements
		requests, limits corev1.ResourceList
		adjusted         []string // substrings, one per note
	}{
		{"no spec: the chart's", nil, rl("cpu", "50m", "memory", "64Mi"), rl("memory", "256Mi"), nil},
		{"within the bounds: as written", &corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "512Mi"), Limits: rl("cpu", "1", "memory", "1Gi")},
			rl("cpu", "500m", "memory", "512Mi"), rl("cpu", "1", "memory", "1Gi"), nil},
		{"the memory limit cannot be removed", &corev1.ResourceRequirements{Requests: rl("cpu", "100m")},
			rl("cpu", "100m"), rl("memory", "256Mi"), nil},
		{"a request above the chart's limit raises the rendered limit", &corev1.ResourceRequirements{Requests: rl("memory", "1Gi")},
			rl("memory", "1Gi"), rl("memory", "1Gi"), nil},
		{"above the maximum: clamped", &corev1.ResourceRequirements{Requests: rl("cpu", "8", "memory", "64Gi"), Limits: rl("cpu", "16", "memory", "64Gi")},
			rl("cpu", "2", "memory", "2Gi"), rl("cpu", "2", "memory", "2Gi"),
			[]string{"limits.cpu 16 is above the chart's maximum 2", "limits.memory 64Gi is above the chart's maximum 2Gi", "requests.cpu 8 is above", "requests.memory 64Gi is above"}},
		{"an unbounded request with no limit: the maximum", &corev1.ResourceRequirements{Requests: rl("memory", "100Gi")},
			rl("memory", "2Gi"), rl("memory", "2Gi"), []string{"limits.memory 100Gi is above the chart's maximum 2Gi", "requests.memory 100Gi is above"}},
		{"below the minimum: raised", &corev1.ResourceRequirements{Limits: rl("memory", "8Mi")},
			nil, rl("memory", "64Mi"), []string{"limits.memory 8Mi is below the chart's minimum 64Mi"}},
		{"a request above the limit is lowered to it", &corev1.ResourceRequirements{Requests: rl("memory", "1Gi"), Limits: rl("memory", "512Mi")},
			rl("memory", "512Mi"), rl("memory", "512Mi"), []string{"requests.memory 1Gi is above the rendered limit 512Mi"}},
		{"GPUs and hugepages are the chart's to give", &corev1.ResourceRequirements{Requests: rl("nvidia.com/gpu", "1"), Limits: rl("nvidia.com/gpu", "1", "hugepages-2Mi", "1Gi", "memory", "512Mi")},
			nil, rl("memory", "512Mi"), []string{"limits[hugepages-2Mi] is ignored", "limits[nvidia.com/gpu] is ignored", "requests[nvidia.com/gpu] is ignored"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := render(testFeed(func(ff *v1alpha1.FlightFeed) { ff.Spec.Pump.Resources = c.spec }), d)
			got := o.Deployment.Spec.Template.Spec.Containers[0].Resources
			if !equalList(got.Requests, c.requests) || !equalList(got.Limits, c.limits) {
				t.Errorf("requests %v limits %v, want %v and %v", got.Requests, got.Limits, c.requests, c.limits)
			}
			if len(o.Adjusted) != len(c.adjusted) {
				t.Fatalf("adjusted %q, want %d notes %q", o.Adjusted, len(c.adjusted), c.adjusted)
			}
			for i, w := range c.adjusted {
				if !strings.Contains(o.Adjusted[i], w) || !strings.HasPrefix(o.Adjusted[i], "spec.pump.resources.") {
					t.Errorf("adjusted[%d] %q, want %q", i, o.Adjusted[i], w)
				}
			}
			if s := PumpPodsStatus(testFeed(nil), o.Deployment, "", o.Adjusted); !slices.Equal(s.Adjusted, o.Adjusted) {
				t.Errorf("status.pumpPods.adjusted %q", s.Adjusted)
			}
		})
	}
}

func equalList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		w, ok := b[n]
		if !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// The chart's own defaults must lie within its bounds, and always carry a
// memory limit.
func TestPumpDefaultsResourceBounds(t *testing.T) {
	base := PumpDefaults{Image: "i"}
	d, err := base.WithDefaults()
	if err != nil || d.Resources.Limits.Memory().Cmp(DefaultPumpMemoryLimit) != 0 {
		t.Errorf("no resources: limits %v, %v", d.Resources.Limits, err)
	}
	low := base
	low.ResourceBounds.MaxMemory = ptr.To(resource.MustParse("128Mi"))
	if d, err := low.WithDefaults(); err != nil || d.Resources.Limits.Memory().String() != "128Mi" {
		t.Errorf("maxMemory 128Mi: limits %v, %v", d.Resources.Limits, err)
	}
	over := low
	over.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	if _, err := over.WithDefaults(); err == nil || !strings.Contains(err.Error(), "resources.limits.memory 1Gi is above") {
		t.Errorf("defaults above the bound: %v", err)
	}
	crossed := base
	crossed.ResourceBounds = PumpResourceBounds{MinMemory: ptr.To(resource.MustParse("1Gi")), MaxMemory: ptr.To(resource.MustParse("512Mi"))}
	if _, err := crossed.WithDefaults(); err == nil || !strings.Contains(err.Error(), "minMemory 1Gi is above maxMemory 512Mi") {
		t.Errorf("crossed bounds: %v", err)
	}
}
