// Command chartdocs writes a Helm chart's README from its values.yaml, in
// the style of helm-docs: the comment lines right above a value are its
// description, and every leaf value (or empty map or list) is one row of
// Key, Type, Default, Description. A value with no description of its own
// nor of an enclosing key is an error (helm-docs would print an empty
// cell; a user meeting the chart from outside this repository would have
// nothing to go on). With -check it writes nothing and fails when the
// README differs from what it would write (hack/helm-check.sh runs it so,
// in CI).
//
//	go run ./hack/chartdocs [-check] [charts/flightfeed]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

func main() {
	check := flag.Bool("check", false, "fail when README.md differs from the generated text instead of writing it")
	flag.Parse()
	dir := "charts/flightfeed"
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	if err := run(dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "chartdocs:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	values, err := os.ReadFile(filepath.Join(dir, "values.yaml")) //nolint:gosec // the chart folder named on the command line
	if err != nil {
		return err
	}
	chart, err := os.ReadFile(filepath.Join(dir, "Chart.yaml")) //nolint:gosec // the chart folder named on the command line
	if err != nil {
		return err
	}
	doc, err := render(chart, values)
	if err != nil {
		return err
	}
	readme := filepath.Join(dir, "README.md")
	if !check {
		return os.WriteFile(readme, doc, 0o644) //nolint:gosec // a README is world-readable
	}
	cur, err := os.ReadFile(readme) //nolint:gosec // the chart folder named on the command line
	if err != nil {
		return fmt.Errorf("%w: run 'go run ./hack/chartdocs'", err)
	}
	if !bytes.Equal(cur, doc) {
		return fmt.Errorf("%s is stale: run 'go run ./hack/chartdocs' and commit it", readme)
	}
	return nil
}

// row is one documented value.
type row struct {
	key, typ, def, desc string
}

func render(chartYAML, valuesYAML []byte) ([]byte, error) {
	var chart struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
		Version     string `yaml:"version"`
		AppVersion  string `yaml:"appVersion"`
		KubeVersion string `yaml:"kubeVersion"`
		Home        string `yaml:"home"`
	}
	if err := yaml.Unmarshal(chartYAML, &chart); err != nil {
		return nil, fmt.Errorf("parse Chart.yaml: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &root); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml: not a map")
	}
	var rows []row
	if err := walk(root.Content[0], "", "", &rows); err != nil {
		return nil, err
	}
	var undocumented []string
	for _, r := range rows {
		if r.desc == "" {
			undocumented = append(undocumented, r.key)
		}
	}
	if len(undocumented) > 0 {
		return nil, fmt.Errorf("values.yaml: %d values have no description (a comment right above the key or its parent): %s",
			len(undocumented), strings.Join(undocumented, ", "))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", chart.Name)
	fmt.Fprintf(&b, "<!-- Generated from values.yaml by hack/chartdocs (go run ./hack/chartdocs); do not edit. -->\n\n")
	fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(chart.Description))
	fmt.Fprintf(&b, "Version %s, app version %s", chart.Version, chart.AppVersion)
	if chart.KubeVersion != "" {
		fmt.Fprintf(&b, ", Kubernetes %s", chart.KubeVersion)
	}
	if chart.Home != "" {
		fmt.Fprintf(&b, ". The operator's own documentation: %s", chart.Home)
	}
	b.WriteString(".\n\n")
	b.WriteString("```sh\nhelm install flightfeed charts/flightfeed -n flightfeed-system --create-namespace \\\n  --set image.repository=REGISTRY/flightfeed\nhelm test flightfeed -n flightfeed-system\n```\n\n")
	b.WriteString("## Values\n\n| Key | Type | Default | Description |\n|-----|------|---------|-------------|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.key, r.typ, cell("`"+r.def+"`"), cell(r.desc))
	}
	return b.Bytes(), nil
}

// walk documents every leaf of the map m under prefix; inherited is the
// description of the nearest enclosing key that has one, used by keys
// without their own (resources.requests.cpu reads as resources says).
func walk(m *yaml.Node, prefix, inherited string, rows *[]row) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		desc := comment(k.HeadComment)
		if desc == "" {
			desc = inherited
		}
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			if err := walk(v, key, desc, rows); err != nil {
				return err
			}
			continue
		}
		def, typ, err := value(v)
		if err != nil {
			return fmt.Errorf("values.yaml: %s: %w", key, err)
		}
		*rows = append(*rows, row{key: key, typ: typ, def: def, desc: desc})
	}
	return nil
}

// value renders a default as compact JSON and names its type.
func value(v *yaml.Node) (def, typ string, err error) {
	var x any
	if err := v.Decode(&x); err != nil {
		return "", "", err
	}
	switch x.(type) {
	case nil:
		typ = "string"
	case bool:
		typ = "bool"
	case int, int64, uint64:
		typ = "int"
	case float64:
		typ = "float"
	case string:
		typ = "string"
	case []any:
		typ = "list"
	case map[string]any:
		typ = "object"
	default:
		typ = fmt.Sprintf("%T", x)
	}
	if x == nil {
		return `""`, typ, nil
	}
	j, err := json.Marshal(x)
	if err != nil {
		return "", "", err
	}
	return string(j), typ, nil
}

// comment joins a head comment's lines, without the '#'. A comment block
// separated from the key by a blank line (a section's heading) belongs to
// the key too: helm-docs reads the last block only, so only that is kept.
func comment(c string) string {
	blocks := strings.Split(strings.TrimSpace(c), "\n\n")
	last := blocks[len(blocks)-1]
	var words []string
	for _, l := range strings.Split(last, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
		if l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " ")
}

// cell escapes what would break a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
