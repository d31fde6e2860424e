package pumppod_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
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

	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// Every alert of the chart's PrometheusRule and every query of its Grafana
// dashboard is valid PromQL (the Prometheus parser) and uses only metrics
// the pump pods export; every alert has a summary, a description, an
// absolute runbook_url built from monitoring.runbookBaseURL and a runbook
// section, and every metric an alert uses is on a dashboard panel (so the
// one paged can see what fired).
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
	runbookPath, runbook := runbookDoc(t, root)
	base, _ := values["monitoring"].(map[string]any)["runbookBaseURL"].(string)
	if u, err := url.Parse(base); err != nil || !u.IsAbs() || u.Fragment != "" {
		t.Fatalf("monitoring.runbookBaseURL %q is not an absolute URL without an anchor", base)
	}
	alerts := 0
	alertMetrics := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s", r.Alert, a)
				}
			}
			if want := base + "#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q (monitoring.runbookBaseURL and the section's anchor)", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !runbookSection(r.Alert).MatchString(runbook) {
				t.Errorf("alert %s has no runbook section (a heading %q) in %s", r.Alert, r.Alert, runbookPath)
			}
			for _, m := range checkQuery(t, "alert "+r.Alert, r.Expr, exported) {
				alertMetrics[m] = append(alertMetrics[m], r.Alert)
			}
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
	onPanel := map[string]bool{}
	walkExprs(dashboard, func(expr string) {
		queries++
		for _, m := range checkQuery(t, "dashboard query", expr, exported) {
			onPanel[m] = true
		}
	})
	if queries == 0 {
		t.Error("the dashboard has no query")
	}
	for _, m := range slices.Sorted(maps.Keys(alertMetrics)) {
		if !onPanel[m] {
			t.Errorf("%s, used by alert %s, is on no dashboard panel", m, strings.Join(alertMetrics[m], ", "))
		}
	}
	// The panels the issue asks for: the Kafka client, the database pool,
	// the read API, the delivery latency.
	for _, m := range []string{"flightfeed_kafka_produce_records_total", "flightfeed_database_pool_acquired_conns",
		"flightfeed_read_api_requests_total", "flightfeed_read_api_request_duration_seconds_bucket",
		"flightfeed_outbox_delivery_latency_seconds_bucket", "flightfeed_delivery_latency_seconds_bucket"} {
		if !onPanel[m] {
			t.Errorf("%s is on no dashboard panel", m)
		}
	}
}

// runbookDoc is the runbook the alerts link to: docs/operations.md (one
// section per alert) once the docs have moved there, else the README's
// "Alerts and runbook" section.
func runbookDoc(t *testing.T, root string) (string, string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md")); err == nil {
		return "docs/operations.md", string(b)
	}
	return "README.md", string(readFile(t, filepath.Join(root, "README.md")))
}

// runbookSection matches a Markdown heading (any level from ##) whose text
// is the alert's name: its GitHub anchor is the name lowercased.
func runbookSection(alert string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^#{2,6} +` + regexp.QuoteMeta(alert) + ` *$`)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkQuery parses expr, checks that each metric it selects is exported
// and returns their names.
func checkQuery(t *testing.T, what, expr string, exported map[string]bool) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", what, expr, err)
		return nil
	}
	var names []string
	selectors := 0
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			selectors++
			names = append(names, vs.Name)
			if !exported[vs.Name] {
				t.Errorf("%s: %q uses %s, which the manager does not export", what, expr, vs.Name)
			}
		}
		return nil
	})
	if selectors == 0 {
		t.Errorf("%s: %q selects no metric", what, expr)
	}
	return names
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

// managerMetricNames are the names of the series the pump pods' metrics
// register, their own and their connections' (a histogram also as its
// _bucket, _sum and _count).
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
	if err := feedrun.DescribeClientMetrics(ch); err != nil {
		t.Fatal(err)
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
