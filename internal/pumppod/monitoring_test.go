package pumppod_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// Every alert of the chart's PrometheusRule and every query of its Grafana
// dashboard is valid PromQL (the Prometheus parser) and uses only metrics
// the manager exports; every alert has a summary, a description and a
// runbook section in docs/operations.md (docs_test.go at the root checks
// the same for every condition reason).
func TestChartAlertsAndDashboardUseExportedMetrics(t *testing.T) {
	root := kubetest.RepoRoot(t)
	chart := filepath.Join(root, "charts", "flightfeed")
	exported := managerMetricNames(t)

	var values map[string]any
	if err := yaml.Unmarshal(readFile(t, filepath.Join(chart, "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	// The chart renders the file with tpl; the thresholds are plain value
	// references, so Go's text/template renders it the same.
	tmpl, err := template.New("alerts").Option("missingkey=error").Parse(string(readFile(t, filepath.Join(chart, "files", "alerts.yaml"))))
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := tmpl.Execute(&rendered, map[string]any{"Values": values}); err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(rendered.Bytes(), &rules); err != nil {
		t.Fatal(err)
	}
	runbook := string(readFile(t, filepath.Join(root, "docs", "operations.md")))
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s", r.Alert, a)
				}
			}
			if !strings.Contains(runbook, "\n### "+r.Alert+"\n") {
				t.Errorf("alert %s has no runbook section (### %s) in docs/operations.md", r.Alert, r.Alert)
			}
			checkQuery(t, "alert "+r.Alert, r.Expr, exported)
		}
	}
	if alerts < 9 {
		t.Errorf("the PrometheusRule has %d alerts, want at least 9", alerts)
	}

	var dashboard any
	if err := json.Unmarshal(readFile(t, filepath.Join(chart, "files", "dashboard.json")), &dashboard); err != nil {
		t.Fatal(err)
	}
	queries := 0
	walkExprs(dashboard, func(expr string) {
		queries++
		checkQuery(t, "dashboard query", expr, exported)
	})
	if queries == 0 {
		t.Error("the dashboard has no query")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkQuery parses expr and checks that each metric it selects is exported.
func checkQuery(t *testing.T, what, expr string, exported map[string]bool) {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", what, expr, err)
		return
	}
	selectors := 0
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			selectors++
			if !exported[vs.Name] {
				t.Errorf("%s: %q uses %s, which the manager does not export", what, expr, vs.Name)
			}
		}
		return nil
	})
	if selectors == 0 {
		t.Errorf("%s: %q selects no metric", what, expr)
	}
}

// walkExprs calls f with every "expr" string of a Grafana dashboard.
func walkExprs(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "expr" {
				f(s)
				continue
			}
			walkExprs(c, f)
		}
	case []any:
		for _, c := range v {
			walkExprs(c, f)
		}
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// managerMetricNames are the names of the series the manager's metrics
// register (a histogram also as its _bucket, _sum and _count).
func managerMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	var rec recorder
	if _, err := pumppod.NewMetrics(&rec); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	ch := make(chan *prometheus.Desc, 1024)
	for _, c := range rec {
		c.Describe(ch)
	}
	close(ch)
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			names[m[1]+suffix] = true
		}
	}
	if !names["flightfeed_leader"] || len(names) < 10 {
		t.Fatalf("the manager's metrics: %v", slices.Sorted(func(yield func(string) bool) {
			for n := range names {
				if !yield(n) {
					return
				}
			}
		}))
	}
	return names
}

// recorder is a prometheus.Registerer that keeps what is registered.
type recorder []prometheus.Collector

func (r *recorder) Register(c prometheus.Collector) error { *r = append(*r, c); return nil }
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	*r = append(*r, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }
