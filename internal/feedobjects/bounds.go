package feedobjects

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// What a FlightFeed's editor may ask of the pods is bounded by the chart:
// spec.pump.resources within PumpResourceBounds, and never without a
// memory limit. A value outside the bounds is clamped, not refused — the
// feed keeps running on the nearest allowed value — and each adjustment is
// said in status.pumpPods.adjusted. docs/security.md, "What an editor may
// set".

// PumpResourceBounds are the chart's bounds on spec.pump.resources (values
// pump.resourceBounds). Unset: no bound of that kind.
type PumpResourceBounds struct {
	// MaxMemory caps the memory limit and request.
	MaxMemory *resource.Quantity `json:"maxMemory,omitempty"`
	// MinMemory is the lowest memory limit (below it the pump cannot run).
	MinMemory *resource.Quantity `json:"minMemory,omitempty"`
	// MaxCPU caps the CPU limit and request.
	MaxCPU *resource.Quantity `json:"maxCPU,omitempty"`
}

// DefaultPumpMemoryLimit is the pump container's memory limit when the
// defaults give none (the chart's pump.resources has 256Mi).
var DefaultPumpMemoryLimit = resource.MustParse("256Mi")

// specResourceNames are the resources spec.pump.resources may set; any
// other (GPUs, hugepages, extended resources) is the chart's to give.
var specResourceNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// checkResources completes the defaults' own resources: a memory limit
// always (DefaultPumpMemoryLimit, or maxMemory when lower), and within the
// bounds, which must be consistent.
func (d *PumpDefaults) checkResources() error {
	b := d.ResourceBounds
	if b.MinMemory != nil && b.MaxMemory != nil && b.MinMemory.Cmp(*b.MaxMemory) > 0 {
		return fmt.Errorf("pump defaults: resourceBounds.minMemory %s is above maxMemory %s", b.MinMemory, b.MaxMemory)
	}
	r := d.Resources.DeepCopy()
	if r.Limits == nil {
		r.Limits = corev1.ResourceList{}
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		lim := DefaultPumpMemoryLimit.DeepCopy()
		if b.MaxMemory != nil && b.MaxMemory.Cmp(lim) < 0 {
			lim = b.MaxMemory.DeepCopy()
		}
		if b.MinMemory != nil && b.MinMemory.Cmp(lim) > 0 {
			lim = b.MinMemory.DeepCopy()
		}
		r.Limits[corev1.ResourceMemory] = lim
	}
	d.Resources = *r
	var errs []error
	check := func(what string, q resource.Quantity, ok bool, lo, hi *resource.Quantity) {
		if !ok {
			return
		}
		if hi != nil && q.Cmp(*hi) > 0 {
			errs = append(errs, fmt.Errorf("pump defaults: resources.%s %s is above the resourceBounds' %s", what, q.String(), hi))
		}
		if lo != nil && q.Cmp(*lo) < 0 {
			errs = append(errs, fmt.Errorf("pump defaults: resources.%s %s is below resourceBounds.minMemory %s", what, q.String(), lo))
		}
	}
	q, ok := r.Limits[corev1.ResourceMemory]
	check("limits.memory", q, ok, b.MinMemory, b.MaxMemory)
	q, ok = r.Requests[corev1.ResourceMemory]
	check("requests.memory", q, ok, nil, b.MaxMemory)
	q, ok = r.Limits[corev1.ResourceCPU]
	check("limits.cpu", q, ok, nil, b.MaxCPU)
	q, ok = r.Requests[corev1.ResourceCPU]
	check("requests.cpu", q, ok, nil, b.MaxCPU)
	return errors.Join(errs...)
}

// boundResources is the pump container's resources: the defaults' (d has
// been through checkResources), or spec's within d.ResourceBounds, with
// what was changed of spec's.
func boundResources(spec *corev1.ResourceRequirements, d PumpDefaults) (corev1.ResourceRequirements, []string) {
	if spec == nil {
		return *d.Resources.DeepCopy(), nil
	}
	var notes []string
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, l := range []struct {
		name     string
		from, to corev1.ResourceList
	}{{"requests", spec.Requests, out.Requests}, {"limits", spec.Limits, out.Limits}} {
		for n, q := range l.from {
			if !slices.Contains(specResourceNames, n) {
				notes = append(notes, fmt.Sprintf("spec.pump.resources.%s[%s] is ignored: a FlightFeed may set only cpu, memory and ephemeral-storage", l.name, n))
				continue
			}
			l.to[n] = q.DeepCopy()
		}
	}
	if len(spec.Claims) > 0 {
		notes = append(notes, "spec.pump.resources.claims is ignored: a FlightFeed may set only cpu, memory and ephemeral-storage")
	}
	b := d.ResourceBounds
	mem := corev1.ResourceMemory
	if _, ok := out.Limits[mem]; !ok {
		// Never without a memory limit: the defaults' one, raised to the
		// request when that is higher (then bounded below).
		lim := d.Resources.Limits[mem].DeepCopy()
		if req, ok := out.Requests[mem]; ok && req.Cmp(lim) > 0 {
			lim = req.DeepCopy()
		}
		out.Limits[mem] = lim
	}
	clampMax := func(list corev1.ResourceList, name corev1.ResourceName, field string, hi *resource.Quantity) {
		q, ok := list[name]
		if !ok || hi == nil || q.Cmp(*hi) <= 0 {
			return
		}
		notes = append(notes, fmt.Sprintf("spec.pump.resources.%s %s is above the chart's maximum %s: %s is rendered", field, q.String(), hi, hi))
		list[name] = hi.DeepCopy()
	}
	cpu := corev1.ResourceCPU
	clampMax(out.Limits, mem, "limits.memory", b.MaxMemory)
	clampMax(out.Requests, mem, "requests.memory", b.MaxMemory)
	clampMax(out.Limits, cpu, "limits.cpu", b.MaxCPU)
	clampMax(out.Requests, cpu, "requests.cpu", b.MaxCPU)
	if lo := b.MinMemory; lo != nil {
		if q := out.Limits[mem]; q.Cmp(*lo) < 0 {
			notes = append(notes, fmt.Sprintf("spec.pump.resources.limits.memory %s is below the chart's minimum %s: %s is rendered", q.String(), lo, lo))
			out.Limits[mem] = lo.DeepCopy()
		}
	}
	// A request above its limit is refused by the API server.
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, rok := out.Requests[n]
		lim, lok := out.Limits[n]
		if rok && lok && req.Cmp(lim) > 0 {
			notes = append(notes, fmt.Sprintf("spec.pump.resources.requests.%s %s is above the rendered limit %s: the limit is rendered as the request", n, req.String(), lim.String()))
			out.Requests[n] = lim.DeepCopy()
		}
	}
	if len(out.Requests) == 0 {
		out.Requests = nil
	}
	slices.Sort(notes)
	return out, notes
}
