package config_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/config"
)

// rangeRule is one bounded number of the spec: set writes v into a valid
// spec; lo and hi are the smallest and largest values accepted. noMax: the
// type's own maximum is the rule's (hi+1 cannot be written).
type rangeRule struct {
	path   string // as the validation error names it, under spec.
	set    func(s *v1alpha1.FlightFeedSpec, v int64)
	lo, hi int64
	noMax  bool
	// crd: the rule is also the CRD schema's minimum and maximum there.
	crd bool
}

func i32(v int64) int32 { return int32(v) } //nolint:gosec // the table's values fit
func p32(v int64) *int32 { x := i32(v); return &x }

var rangeRules = []rangeRule{
	{path: "mailbox.batchSize", lo: 1, hi: 10000, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Mailbox.BatchSize = i32(v) }},
	{path: "mailbox.maxMessageBytes", lo: 1024, hi: 1 << 30, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Mailbox.MaxMessageBytes = v }},
	{path: "mailbox.maxBatchBytes", lo: 64 << 10, hi: 1 << 30, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Mailbox.MaxBatchBytes = v }},
	{path: "mailbox.recsDropPercent", lo: 1, hi: 100, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Mailbox.RecsDropPercent = i32(v) }},
	{path: "database.maxConns", lo: 2, hi: 64, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Database.MaxConns = i32(v) }},
	{path: "kafka.maxRecordBytes", lo: config.MinRecordBytes, hi: config.MaxRecordBytes, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Kafka.MaxRecordBytes = i32(v) }},
	{path: "kafka.brokers[0]", lo: 1, hi: 65535,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Kafka.Brokers = []string{fmt.Sprintf("kafka.ops:%d", v)} }},
	{path: "requests.horizon.from", lo: -30, hi: 30, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Requests.Horizon = &v1alpha1.HorizonSpec{From: i32(v), To: 30} }},
	{path: "requests.horizon.to", lo: -30, hi: 30, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Requests.Horizon = &v1alpha1.HorizonSpec{From: -30, To: i32(v)} }},
	{path: "retention.ledgerDays", lo: 0, hi: 3650, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.LedgerDays = p32(v) }},
	{path: "retention.traceLogDays", lo: 1, hi: 3650, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.TraceLogDays = i32(v) }},
	{path: "retention.archiveDays", lo: 1, hi: 3650, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.ArchiveDays = i32(v) }},
	{path: "retention.nullDayDays", lo: 0, hi: 3650, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.NullDayDays = p32(v) }},
	{path: "retention.deliveredEventDays", lo: 1, hi: 3650, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.DeliveredEventDays = i32(v) }},
	{path: "retention.flightFeedDays", lo: 1, hi: 366, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Retention.FlightFeedDays = i32(v) }},
	{path: "pump.unsupportedRetryLimit", lo: 0, hi: 1000, crd: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Pump.UnsupportedRetryLimit = p32(v) }},
	{path: "pump.infraRetryLimit", lo: 0, hi: 1<<31 - 1, noMax: true,
		set: func(s *v1alpha1.FlightFeedSpec, v int64) { s.Pump.InfraRetryLimit = i32(v) }},
}

// durationRule is one bounded duration: lo accepted, lo-1ns refused; hi
// (when set) accepted and hi+1ns refused.
type durationRule struct {
	path   string
	set    func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration)
	lo, hi time.Duration
}

var durationRules = []durationRule{
	{path: "mailbox.pollInterval", lo: time.Millisecond, hi: time.Minute,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.Mailbox.PollInterval = d }},
	{path: "history.sweepInterval", lo: time.Second,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.History.SweepInterval = d }},
	{path: "history.plausibleWindow", lo: time.Hour,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.History.PlausibleWindow = d }},
	{path: "requests.interval", lo: time.Second,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.Requests.Interval = d }},
	{path: "requests.timeout", lo: time.Second,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.Requests.Timeout = d }},
	{path: "requests.referenceData.interval", lo: time.Minute,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.Requests.ReferenceData.Interval = d }},
	{path: "history.scheduledAge", lo: time.Nanosecond,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.History.ScheduledAge = d }},
	{path: "pump.backoffInitial", lo: time.Nanosecond,
		set: func(s *v1alpha1.FlightFeedSpec, d *metav1.Duration) { s.Pump.BackoffInitial = d; s.Pump.BackoffMax = nil }},
}

// errorsAt is the validation errors of spec with v written by set, at the
// rule's path.
func errorsAt(t *testing.T, path string, set func(*v1alpha1.FlightFeedSpec)) (at, other []string) {
	t.Helper()
	feed, err := config.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	spec := feed.Spec
	set(&spec)
	_, errs := config.ValidateSpec(&spec, field.NewPath("spec"))
	for _, e := range errs {
		switch {
		case e.Field == "spec."+path:
			at = append(at, e.Error())
		case strings.Contains(e.Detail, "must not be after requests.horizon.to"):
			// horizon.to below -30 is also before horizon.from.
		default:
			other = append(other, e.Error())
		}
	}
	return at, other
}

// Every range rule at its edges: lo-1 refused, lo and hi accepted, hi+1
// refused, each refusal naming the field and the range, nothing else
// refused.
func TestEveryRangeRuleAtItsEdges(t *testing.T) {
	for _, r := range rangeRules {
		t.Run(r.path, func(t *testing.T) {
			cases := []struct {
				v      int64
				accept bool
			}{{r.lo - 1, false}, {r.lo, true}, {r.hi, true}}
			if !r.noMax {
				cases = append(cases, struct {
					v      int64
					accept bool
				}{r.hi + 1, false})
			}
			for _, c := range cases {
				at, other := errorsAt(t, r.path, func(s *v1alpha1.FlightFeedSpec) { r.set(s, c.v) })
				if len(other) > 0 {
					t.Errorf("%d: other fields refused: %v", c.v, other)
				}
				switch {
				case c.accept && len(at) > 0:
					t.Errorf("%d refused: %v", c.v, at)
				case !c.accept && len(at) == 0:
					t.Errorf("%d accepted, want refused (range %d to %d)", c.v, r.lo, r.hi)
				case !c.accept && !strings.Contains(at[0], fmt.Sprint(r.lo)):
					t.Errorf("%d: the refusal does not name the range: %s", c.v, at[0])
				}
			}
		})
	}
}

func TestEveryDurationRuleAtItsEdges(t *testing.T) {
	for _, r := range durationRules {
		t.Run(r.path, func(t *testing.T) {
			type tc struct {
				d      time.Duration
				accept bool
			}
			cases := []tc{{r.lo - time.Nanosecond, false}, {r.lo, true}}
			if r.hi > 0 {
				cases = append(cases, tc{r.hi, true}, tc{r.hi + time.Nanosecond, false})
			}
			for _, c := range cases {
				at, other := errorsAt(t, r.path, func(s *v1alpha1.FlightFeedSpec) { r.set(s, &metav1.Duration{Duration: c.d}) })
				if len(other) > 0 {
					t.Errorf("%v: other fields refused: %v", c.d, other)
				}
				if c.accept != (len(at) == 0) {
					t.Errorf("%v: accepted=%v, want %v (%v)", c.d, len(at) == 0, c.accept, at)
				}
			}
		})
	}
}

// The CRD's schema bounds each number as the validation does: the API
// server refuses what the operator would refuse, with the same range.
func TestTheCRDBoundsAreTheValidations(t *testing.T) {
	b, err := os.ReadFile("../../config/crd/bases/flightfeed.aero_flightfeeds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema crdSchema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, r := range rangeRules {
		if !r.crd {
			continue
		}
		s, ok := root, true
		for _, part := range strings.Split(r.path, ".") {
			if s, ok = s.Properties[part]; !ok {
				break
			}
		}
		if !ok {
			t.Errorf("%s: not in the CRD schema", r.path)
			continue
		}
		if s.Minimum == nil || *s.Minimum != float64(r.lo) || s.Maximum == nil || *s.Maximum != float64(r.hi) {
			t.Errorf("%s: CRD minimum %v maximum %v, the validation %d to %d", r.path, deref(s.Minimum), deref(s.Maximum), r.lo, r.hi)
		}
	}
}

type crdSchema struct {
	Properties map[string]crdSchema `json:"properties"`
	Minimum    *float64          `json:"minimum"`
	Maximum    *float64          `json:"maximum"`
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}
