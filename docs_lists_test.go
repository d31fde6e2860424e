package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/feedrun"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/readapi"
)

// The lists the docs repeat from the code, each checked against the code
// (the failure names what is missing or extra): the conditions, the
// metrics, the read API's routes, the runbook's alerts, the chart values
// and resource fields the docs cite, the pump's default memory limit, and
// the chart NOTES' upgrade note. The commands' flags are checked in
// internal/cli (docs_flags_test.go), where the command trees are.

// TestReadmeNamesEveryCondition: the README's "Conditions: …" sentence
// names every condition type of api/v1alpha1/conditions.go, and no other.
func TestReadmeNamesEveryCondition(t *testing.T) {
	types := stringConstants(t, "api/v1alpha1/conditions.go", "ConditionType")
	if len(types) < 7 {
		t.Fatalf("read %d condition types from api/v1alpha1/conditions.go, want at least 7", len(types))
	}
	m := regexp.MustCompile(`(?s)Conditions: (.*?)[;.]\s`).FindStringSubmatch(readText(t, "README.md"))
	if m == nil {
		t.Fatal(`README.md has no sentence "Conditions: ` + "`Ready`" + `, …;"`)
	}
	compareSets(t, "README.md's conditions", backticked(m[1]), types, "api/v1alpha1/conditions.go")
}

// TestObservabilityListsEveryMetric: the metric table of
// docs/observability.md names every series a pump pod registers (its own
// and its connections'; a row `prefix_*` covers a family) and no series
// the pods do not have.
func TestObservabilityListsEveryMetric(t *testing.T) {
	exported := pumpPodMetrics(t)
	doc := readText(t, "docs/observability.md")
	var rows []string
	for _, l := range strings.Split(doc, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 3 || !strings.HasPrefix(l, "| `") {
			continue
		}
		for _, name := range backticked(cells[1]) {
			if i := strings.IndexByte(name, '{'); i >= 0 {
				name = name[:i]
			}
			if strings.HasPrefix(name, "flightfeed_") || strings.HasPrefix(name, "go_") {
				rows = append(rows, name)
			}
		}
	}
	if len(rows) < 20 {
		t.Fatalf("read %d metrics from docs/observability.md's table, want at least 20", len(rows))
	}
	covered := map[string]bool{}
	for _, r := range rows {
		matched := false
		for _, e := range exported {
			if e == r || strings.HasSuffix(r, "*") && strings.HasPrefix(e, strings.TrimSuffix(r, "*")) {
				covered[e], matched = true, true
			}
		}
		if !matched {
			t.Errorf("docs/observability.md lists %s, which no pump pod exports", r)
		}
	}
	for _, e := range exported {
		if !covered[e] {
			t.Errorf("docs/observability.md's metric table lacks %s, which the pump pods export", e)
		}
	}

	// Every other page names only exported metrics too (or a family of
	// them, prefix_*). Names of the form flightfeed_… that are no metric:
	// (A name followed by a file extension is a file: config/samples/….)
	notMetrics := map[string]bool{"flightfeed_reader": true, "flightfeed_writer": true, // database roles
		"flightfeed_linux_amd64": true, // a release archive
		"flightfeed_demo_mbx":    true, // the demo's mailbox
		"flightfeed_verify_":     true, // verify's scratch schemas
	}
	name := regexp.MustCompile(`(?:^|[^-\w])(flightfeed_[a-z0-9_]*\*?)(\.[a-z]+)?`)
	for _, page := range append(docPages(t), "README.md") {
		text := readText(t, page)
		if page == "docs/install-and-upgrade.md" {
			text, _, _ = strings.Cut(text, "\n## Upgrade notes") // they name renamed metrics
		}
		for _, m := range name.FindAllStringSubmatch(text, -1) {
			n := m[1]
			if notMetrics[n] || m[2] != "" {
				continue
			}
			known := slices.ContainsFunc(exported, func(e string) bool {
				return e == n || strings.HasSuffix(n, "*") && strings.HasPrefix(e, strings.TrimSuffix(n, "*")) ||
					strings.HasPrefix(e, n) && slices.Contains([]string{"_bucket", "_sum", "_count"}, strings.TrimPrefix(e, n))
			}) || slices.ContainsFunc(exported, func(e string) bool {
				return slices.Contains([]string{e + "_bucket", e + "_sum", e + "_count"}, n)
			})
			if !known {
				t.Errorf("%s names %s, which is no metric a pump pod exports (a name of another kind: add it to notMetrics)", page, n)
			}
		}
	}
}

// pumpPodMetrics are the names of the series a pump pod registers:
// pumppod.NewMetrics (the read API's among them) and its feed's
// connections (feedrun.DescribeClientMetrics).
func pumpPodMetrics(t *testing.T) []string {
	t.Helper()
	var rec registered
	if _, err := pumppod.NewMetrics(&rec); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 1024)
	for _, c := range rec {
		c.Describe(ch)
	}
	if err := feedrun.DescribeClientMetrics(ch); err != nil {
		t.Fatal(err)
	}
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names[m[1]] = true
	}
	if !names["flightfeed_leader"] || !names["flightfeed_read_api_requests_total"] {
		t.Fatalf("the pump pods' metrics lack flightfeed_leader or the read API's: %v", slices.Sorted(maps.Keys(names)))
	}
	return slices.Sorted(maps.Keys(names))
}

// registered is a prometheus.Registerer that keeps what is registered.
type registered []prometheus.Collector

func (r *registered) Register(c prometheus.Collector) error   { *r = append(*r, c); return nil }
func (r *registered) MustRegister(cs ...prometheus.Collector) { *r = append(*r, cs...) }
func (r *registered) Unregister(prometheus.Collector) bool    { return false }

// TestReadAPIRoutesAreDocumented: docs/reliability.md's route table has one
// row per route of the read API (readapi.Routes) with its method and path,
// the permission its token needs and its metric label, and
// docs/observability.md's list of route labels is the routes' and "other".
func TestReadAPIRoutesAreDocumented(t *testing.T) {
	routes := readapi.Routes()
	if len(routes) < 10 {
		t.Fatalf("readapi.Routes() has %d routes, want at least 10", len(routes))
	}
	want := map[string]string{}
	var labels []string
	for _, r := range routes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		path = strings.TrimPrefix(path, "/api/v1/feeds/{namespace}/{name}")
		want[method+" …"+path] = r.Permission.String() + " " + r.Label
		labels = append(labels, r.Label)
	}
	// | `GET …/flights` | `get flightfeeds/flights` | `flights` | what |
	row := regexp.MustCompile("^\\| `((?:GET|POST|PUT|DELETE) …[^`]*)` \\| `([^`]+)` \\| `([^`]+)` \\|")
	got := map[string]string{}
	for _, l := range strings.Split(readText(t, "docs/reliability.md"), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			if _, dup := got[m[1]]; dup {
				t.Errorf("docs/reliability.md lists the route %s twice", m[1])
			}
			got[m[1]] = m[2] + " " + m[3]
		}
	}
	for route, w := range want {
		switch g, ok := got[route]; {
		case !ok:
			t.Errorf("docs/reliability.md's route table lacks `%s` (permission and label: %s)", route, w)
		case g != w:
			t.Errorf("docs/reliability.md's route table says `%s` is %q (permission, label); the code: %q", route, g, w)
		}
	}
	for route := range got {
		if _, ok := want[route]; !ok {
			t.Errorf("docs/reliability.md's route table lists `%s`, which the read API does not serve", route)
		}
	}

	m := regexp.MustCompile("`flightfeed_read_api_requests_total\\{route,code\\}` \\| [^|]*?by route \\(([^)]*)\\)").FindStringSubmatch(readText(t, "docs/observability.md"))
	if m == nil {
		t.Fatal("docs/observability.md's row of flightfeed_read_api_requests_total lists no routes (\"by route (`flights`, …)\")")
	}
	compareSets(t, "docs/observability.md's route labels", backticked(m[1]), append(labels, readapi.OtherRoute), "readapi.Routes()")
}

// TestRunbookAlertsAreTheChartsAlerts: every alert section of
// docs/operations.md's "Runbook: alerts" is an alert of the chart's
// PrometheusRule (TestRunbookCoversAlertsAndReasons checks the other way),
// and every alert's description speaks of the pump pods, not the
// operator's ("manager") replicas, which lead no feed.
func TestRunbookAlertsAreTheChartsAlerts(t *testing.T) {
	rules := readText(t, "charts/flightfeed/files/alerts.yaml")
	alerts := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert:\s*"?([A-Za-z0-9]+)"?\s*$`).FindAllStringSubmatch(rules, -1) {
		alerts[m[1]] = true
	}
	section := markdownSection(t, "docs/operations.md", "## Runbook: alerts")
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)\s*$`).FindAllStringSubmatch(section, -1) {
		n++
		if !alerts[m[1]] {
			t.Errorf("docs/operations.md has a runbook section for %s, which is no alert of charts/flightfeed/files/alerts.yaml", m[1])
		}
	}
	if n < 9 {
		t.Fatalf("read %d alert sections from docs/operations.md, want at least 9", n)
	}
	if m := regexp.MustCompile(`(?mi)^.*\bmanager (replica|pod).*$`).FindString(rules); m != "" {
		t.Errorf("charts/flightfeed/files/alerts.yaml speaks of the manager's replicas; the pump pods lead a feed:\n%s", m)
	}
}

// TestDocsNameRealValuesAndFields: every chart value and every FlightFeed
// or FlightFeedDay field the docs name in code (`pump.certManager.enabled`,
// `retention.archiveDays`, `status.pumpPods.waiting`, `--set image.tag=…`)
// is one of charts/flightfeed/values.yaml or of the CRDs' schemas. The
// upgrade notes are left out: they name values and fields that are gone.
func TestDocsNameRealValuesAndFields(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal([]byte(readText(t, "charts/flightfeed/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	feed, day := crdSchema(t, "config/crd/bases/flightfeed.aero_flightfeeds.yaml"), crdSchema(t, "config/crd/bases/flightfeed.aero_flightfeeddays.yaml")
	specFields := feed["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)
	configFile := readGoStructs(t, "internal/config/file.go")
	pages := append(docPages(t), "README.md")
	path := regexp.MustCompile(`^[a-z][A-Za-z0-9]*(?:\.[a-z*][A-Za-z0-9*]*(?:\[[0-9]*\])?)+`)
	checked := 0
	for _, page := range pages {
		if page == "docs/configuration.md" {
			continue // generated from the CRDs
		}
		text := readText(t, page)
		if page == "docs/install-and-upgrade.md" {
			text, _, _ = strings.Cut(text, "\n## Upgrade notes")
		}
		var cited []string
		for _, code := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(text, -1) {
			cited = append(cited, code[1])
		}
		for _, set := range regexp.MustCompile(`--set ([A-Za-z0-9.\[\]]+)=`).FindAllStringSubmatch(text, -1) {
			cited = append(cited, set[1])
		}
		for _, c := range cited {
			p := path.FindString(c)
			if p == "" || strings.Contains(c, ".k8s.io") || strings.Contains(c, ".aero") {
				continue
			}
			segs := strings.Split(p, ".")
			_, isValue := values[segs[0]]
			_, isSpec := specFields[segs[0]]
			switch {
			case segs[0] == "spec" || segs[0] == "status":
				checked++
				if !schemaHasPath(feed, segs) && !schemaHasPath(day, segs) {
					t.Errorf("%s names `%s`: neither the FlightFeed's nor the FlightFeedDay's schema has %s", page, c, p)
				}
			case isValue || isSpec:
				checked++
				asValue := isValue && valuesHas(values, segs)
				asField := isSpec && (schemaHasPath(feed, append([]string{"spec"}, segs...)) || configFile.has(feed, segs))
				if !asValue && !asField {
					t.Errorf("%s names `%s`: %s is neither a value of charts/flightfeed/values.yaml nor a FlightFeed spec field (nor a field of the --config file)", page, c, p)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d values and fields in the docs, want at least 100: the scan is broken", checked)
	}
}

// goStructs are a Go file's struct types: each field's JSON name and its
// type's name (a pointer's element; "v1alpha1.X" for another package's).
type goStructs map[string]map[string]string

func readGoStructs(t *testing.T, file string) goStructs {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := goStructs{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		fields := map[string]string{}
		for _, fl := range st.Fields.List {
			if fl.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(fl.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			typ := fl.Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			switch x := typ.(type) {
			case *ast.Ident:
				fields[name] = x.Name
			case *ast.SelectorExpr:
				fields[name] = x.X.(*ast.Ident).Name + "." + x.Sel.Name
			default:
				fields[name] = ""
			}
		}
		out[ts.Name.Name] = fields
		return true
	})
	if len(out["fileSpec"]) < 5 {
		t.Fatalf("%s: no fileSpec struct with its fields", file)
	}
	return out
}

// has says whether the --config file (fileSpec) has the path segs: its
// own fields (the inline DSNs and credentials), or the FlightFeed spec's
// where it takes them as they are.
func (g goStructs) has(feed map[string]any, segs []string) bool {
	typ := "fileSpec"
	for i, s := range segs {
		fields, ok := g[typ]
		if !ok {
			return false
		}
		next, ok := fields[s]
		if !ok {
			// An inlined spec type: the spec's field.
			return fields[""] != "" && schemaHasPath(feed, append([]string{"spec"}, segs...))
		}
		if strings.HasPrefix(next, "v1alpha1.") {
			return schemaHasPath(feed, append([]string{"spec"}, segs...))
		}
		if _, ok := g[next]; !ok {
			return i == len(segs)-1
		}
		typ = next
	}
	return true
}

// crdSchema is the openAPIV3Schema of a CRD's first version.
func crdSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readText(t, file)), &crd); err != nil || len(crd.Spec.Versions) == 0 {
		t.Fatalf("%s: no schema (%v)", file, err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// schemaHasPath says whether the schema has the field path segs (a segment
// "*" stands for any field; "[]" or "[N]" after a name is an item of a
// list; a map or an object of unknown fields takes any path below it).
func schemaHasPath(schema map[string]any, segs []string) bool {
	node := schema
	for _, s := range segs {
		for node["type"] == "array" {
			items, ok := node["items"].(map[string]any)
			if !ok {
				return false
			}
			node = items
		}
		if node["additionalProperties"] != nil || node["x-kubernetes-preserve-unknown-fields"] == true {
			return true
		}
		if s == "*" {
			return node["properties"] != nil
		}
		props, _ := node["properties"].(map[string]any)
		child, ok := props[strings.TrimRight(strings.TrimRight(s, "]0123456789"), "[")].(map[string]any)
		if !ok {
			return false
		}
		node = child
	}
	return true
}

// valuesHas says whether values has the path segs ("*": any key; an empty
// map, such as labels: {}, takes any key).
func valuesHas(values map[string]any, segs []string) bool {
	var node any = values
	for _, s := range segs {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if len(m) == 0 || s == "*" {
			return true
		}
		if node, ok = m[strings.TrimRight(strings.TrimRight(s, "]0123456789"), "[")]; !ok {
			return false
		}
	}
	return true
}

// TestPumpMemoryLimitIsTheChartsDefault: docs/performance.md sizes the
// pump pods against the chart's default memory limit
// (pump.resources.limits.memory), and internal/e2e/sizing measures in
// a cgroup of that size.
func TestPumpMemoryLimitIsTheChartsDefault(t *testing.T) {
	var values struct {
		Pump struct {
			Resources struct {
				Limits struct {
					Memory string `json:"memory"`
				} `json:"limits"`
			} `json:"resources"`
		} `json:"pump"`
	}
	if err := yaml.Unmarshal([]byte(readText(t, "charts/flightfeed/values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	limit := values.Pump.Resources.Limits.Memory
	mib, ok := strings.CutSuffix(limit, "Mi")
	if !ok {
		t.Fatalf("pump.resources.limits.memory is %q, not in Mi", limit)
	}
	doc := readText(t, "docs/performance.md")
	claims := regexp.MustCompile("\\*\\*([0-9]+) ?Mi(?:B)?\\*\\* \\(`pump\\.resources\\.limits\\.memory`").FindAllStringSubmatch(doc, -1)
	if len(claims) == 0 {
		t.Error("docs/performance.md does not say which memory limit to give the pump pods (**NMi** (`pump.resources.limits.memory`, …)")
	}
	for _, c := range claims {
		if c[1] != mib {
			t.Errorf("docs/performance.md sizes the pump pods at %s MiB; the chart's pump.resources.limits.memory is %s", c[1], limit)
		}
	}
	for _, m := range regexp.MustCompile(`([0-9]+) MiB memory cgroup \(the chart's default`).FindAllStringSubmatch(doc, -1) {
		if m[1] != mib {
			t.Errorf("docs/performance.md measures in a %s MiB cgroup it calls the chart's default; pump.resources.limits.memory is %s", m[1], limit)
		}
	}
	m := regexp.MustCompile(`const chartMemoryLimit = ([0-9]+) << 20`).FindStringSubmatch(readText(t, "internal/e2e/sizing/sizing_test.go"))
	if m == nil || m[1] != mib {
		t.Errorf("internal/e2e/sizing measures in a cgroup other than the chart's pump.resources.limits.memory (%s): %v", limit, m)
	}
}

// TestChartNotesNameThisVersionsUpgrade: on an upgrade the chart's NOTES
// print the note of upgrading to this chart version: the newest "### A → B"
// heading of docs/install-and-upgrade.md is B = Chart.yaml's version, and
// the NOTES' upgrade text names A and links that heading's anchor (and no
// other version), so it cannot go on printing an old release's note.
func TestChartNotesNameThisVersionsUpgrade(t *testing.T) {
	m := regexp.MustCompile(`(?m)^version: *"?([0-9][^"\s]*)"?$`).FindStringSubmatch(readText(t, "charts/flightfeed/Chart.yaml"))
	if m == nil {
		t.Fatal("charts/flightfeed/Chart.yaml has no version")
	}
	version := m[1]
	h := regexp.MustCompile(`(?m)^### ([0-9]+\.[0-9]+\.[0-9]+) → ([0-9]+\.[0-9]+\.[0-9]+)(.*)$`).FindStringSubmatch(readText(t, "docs/install-and-upgrade.md"))
	if h == nil {
		t.Fatal(`docs/install-and-upgrade.md has no upgrade note "### A → B"`)
	}
	from, to := h[1], h[2]
	if to != version {
		t.Fatalf("the chart is at %s but docs/install-and-upgrade.md's newest upgrade note is %s → %s: write the note of %s (if only \"nothing to do\") and the NOTES' upgrade text", version, from, to, version)
	}
	notes := readText(t, "charts/flightfeed/templates/NOTES.txt")
	_, block, ok := strings.Cut(notes, "{{- if .Release.IsUpgrade }}")
	if !ok {
		t.Fatal("charts/flightfeed/templates/NOTES.txt has no {{- if .Release.IsUpgrade }} block")
	}
	block, _, _ = strings.Cut(block, "{{- end }}")
	if !strings.Contains(block, "from "+from) {
		t.Errorf("the NOTES' upgrade text does not name the version it upgrades from (%q, the note %s → %s):\n%s", "from "+from, from, to, block)
	}
	if !strings.Contains(block, "{{ .Chart.Version }}") && !strings.Contains(block, version) {
		t.Errorf("the NOTES' upgrade text does not name the chart's version %s:\n%s", version, block)
	}
	if a := "install-and-upgrade.md#" + anchor(strings.TrimPrefix(h[0], "### ")); !strings.Contains(block, a) {
		t.Errorf("the NOTES' upgrade text does not link the note's heading (%s):\n%s", a, block)
	}
	for _, v := range regexp.MustCompile(`\b[0-9]+\.[0-9]+(?:\.[0-9]+)?\b`).FindAllString(block, -1) {
		if v != from && v != version {
			t.Errorf("the NOTES' upgrade text names version %s, neither %s nor %s", v, from, version)
		}
	}
}

// docPages are docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) < 10 {
		t.Fatalf("docs/*.md: %d pages (%v)", len(pages), err)
	}
	return pages
}

// markdownSection is the text of file from the heading line to the next
// heading of the same or a higher level.
func markdownSection(t *testing.T, file, heading string) string {
	t.Helper()
	text := readText(t, file)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	rest := text[i+len(heading)+2:]
	level := strings.SplitN(heading, " ", 2)[0]
	for j := 0; j < len(rest); {
		k := strings.Index(rest[j:], "\n#")
		if k < 0 {
			break
		}
		line := rest[j+k+1:]
		if hashes := line[:strings.IndexFunc(line, func(r rune) bool { return r != '#' })]; len(hashes) <= len(level) {
			return rest[:j+k]
		}
		j += k + 1
	}
	return rest
}

// backticked returns the code spans of s.
func backticked(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// compareSets reports what got (what a doc lists) lacks of want (what the
// code has) and what it lists beyond it.
func compareSets(t *testing.T, what string, got, want []string, source string) {
	t.Helper()
	g, w := map[string]bool{}, map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		w[s] = true
	}
	for _, s := range slices.Sorted(maps.Keys(w)) {
		if !g[s] {
			t.Errorf("%s lack %s (%s has it)", what, s, source)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(g)) {
		if !w[s] {
			t.Errorf("%s name %s, which %s does not have", what, s, source)
		}
	}
}

// TestConfigurationDefaultsAreTheCRDs: the hand-written table of
// docs/configuration.md (above the generated reference) gives each field's
// default as the FlightFeed CRD's schema has it (a field without a schema
// default: its zero value, false or 0). A row names one field or several
// (`retention.traceLogDays` / `.archiveDays`), with as many defaults or one
// for each.
func TestConfigurationDefaultsAreTheCRDs(t *testing.T) {
	feed := crdSchema(t, "config/crd/bases/flightfeed.aero_flightfeeds.yaml")
	text, _, ok := strings.Cut(readText(t, "docs/configuration.md"), "<!-- BEGIN GENERATED")
	if !ok {
		t.Fatal("docs/configuration.md has no generated reference")
	}
	checked := 0
	for _, l := range strings.Split(text, "\n") {
		cells := strings.Split(l, "|")
		if !strings.HasPrefix(l, "| `") || len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[2]), "`") {
			continue // no default written as a value (required, off, none)
		}
		names := backticked(cells[1])
		base := names[0]
		fields := []string{base}
		for _, n := range names[1:] {
			if strings.HasPrefix(n, ".") {
				n = base[:strings.LastIndexByte(base, '.')] + n
			}
			fields = append(fields, n)
		}
		values := backticked(cells[2])
		if strings.Contains(cells[2], " each") {
			values = slices.Repeat(values[:1], len(fields))
		}
		for i, f := range fields {
			if strings.Contains(f, "*") {
				continue // a set of fields, a layout
			}
			node, ok := schemaAt(feed, append([]string{"spec"}, strings.Split(f, ".")...))
			if !ok {
				t.Errorf("docs/configuration.md gives a default for %s, which the FlightFeed spec does not have", f)
				continue
			}
			if i >= len(values) {
				t.Errorf("docs/configuration.md's row of %s has no default for it", f)
				continue
			}
			want, has := node["default"]
			if !has {
				switch node["type"] {
				case "boolean":
					want = false
				case "integer":
					want = 0
				default:
					continue // another field's value (requests.referenceData.routingId)
				}
			}
			checked++
			var got any
			if err := yaml.Unmarshal([]byte(values[i]), &got); err != nil {
				t.Errorf("docs/configuration.md: the default of %s, %q, is no value: %v", f, values[i], err)
				continue
			}
			if g, w := normalise(got), normalise(want); !reflect.DeepEqual(g, w) {
				t.Errorf("docs/configuration.md says %s defaults to %s; the CRD: %v", f, values[i], want)
			}
		}
	}
	if checked < 25 {
		t.Fatalf("checked %d defaults in docs/configuration.md, want at least 25: the scan is broken", checked)
	}
}

// schemaAt is the schema of the field path segs, if it has one.
func schemaAt(schema map[string]any, segs []string) (map[string]any, bool) {
	node := schema
	for _, s := range segs {
		props, _ := node["properties"].(map[string]any)
		child, ok := props[s].(map[string]any)
		if !ok {
			return nil, false
		}
		node = child
	}
	return node, true
}

// normalise makes YAML and JSON numbers comparable (float64).
func normalise(v any) any {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = normalise(x)
		}
		return out
	}
	return v
}

// TestObservabilityCountsTheDashboardsPanels: docs/observability.md's
// "Its N panels" is the number of panels (rows aside) of the chart's
// dashboard.
func TestObservabilityCountsTheDashboardsPanels(t *testing.T) {
	var dashboard struct {
		Panels []struct {
			Type   string            `json:"type"`
			Panels []json.RawMessage `json:"panels"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readText(t, "charts/flightfeed/files/dashboard.json")), &dashboard); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range dashboard.Panels {
		if p.Type != "row" {
			n++
		}
		n += len(p.Panels) // a collapsed row's panels
	}
	m := regexp.MustCompile(`Its ([0-9]+) panels`).FindStringSubmatch(readText(t, "docs/observability.md"))
	if m == nil {
		t.Fatal(`docs/observability.md does not say how many panels the dashboard has ("Its N panels")`)
	}
	if m[1] != strconv.Itoa(n) {
		t.Errorf("docs/observability.md says the dashboard has %s panels; charts/flightfeed/files/dashboard.json has %d", m[1], n)
	}
}
