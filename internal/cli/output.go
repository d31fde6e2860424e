package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/liggitt/tabwriter"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Output formats of -o. A command that prints a table takes "" (the
// table), wide, json and yaml, as kubectl get does; the flightfeed binary's
// table commands also keep "table" (the same as "").
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
)

// outputFlag registers -o with the formats allowed and returns a getter
// that refuses any other.
func outputFlag(cmd *cobra.Command, def, help string, allowed ...string) func() (string, error) {
	o := cmd.Flags().StringP("output", "o", def, help)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
	return func() (string, error) {
		if slices.Contains(allowed, *o) || (*o == "" && def == "") {
			return *o, nil
		}
		return "", usageError{fmt.Errorf("-o %q: must be %s", *o, strings.Join(allowed, ", "))}
	}
}

// tableOutput is -o for a command that prints a table: json|yaml|wide (the
// table by default); the flightfeed binary takes table|wide|json, its
// -o json one object per line, as it always has.
func tableOutput(cmd *cobra.Command, m mode) func() (string, error) {
	if m.plugin() {
		return outputFlag(cmd, "", "output format: json, yaml or wide (default: a table)", outJSON, outYAML, outWide)
	}
	// The binary's contract: -o table|json, json as JSON lines (scripts
	// read them), and nothing else but wide; -o yaml is the plugin's.
	return outputFlag(cmd, outTable, "output format: table, wide or json (one object per line)", outTable, outWide, outJSON)
}

// printRows prints rows as the table t (its Rows filled from rows by
// row), or, for -o json/yaml, the rows themselves: as a kubectl List in
// the plugin, as JSON lines (-o json) on the flightfeed binary.
func printRows[T any](w io.Writer, m mode, format string, t *metav1.Table, rows []T, row func(T) []any) error {
	bw := bufio.NewWriter(w)
	switch format {
	case outJSON, outYAML:
		if !m.plugin() {
			if format != outJSON {
				return usageError{fmt.Errorf("-o %s: must be %s", format, outJSON)}
			}
			return writeJSONLines(bw, rows)
		}
		list, err := listObject(rows)
		if err != nil {
			return err
		}
		if err := m.kubectl.PrintObject(bw, format == outYAML, list); err != nil {
			return err
		}
		return flush(bw)
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: row(r)})
	}
	if err := printTable(bw, m, t, format == outWide); err != nil {
		return err
	}
	return flush(bw)
}

// printTable prints t as kubectl get does (kubectl's own table printer in
// the plugin): priority-1 columns only when wide. An empty table still
// prints its header, which kubectl leaves out, so a script sees the
// columns.
func printTable(w io.Writer, m mode, t *metav1.Table, wide bool) error {
	if len(t.Rows) == 0 {
		var names []string
		for _, c := range t.ColumnDefinitions {
			if wide || c.Priority == 0 {
				names = append(names, strings.ToUpper(c.Name))
			}
		}
		_, err := fmt.Fprintln(w, strings.Join(names, "   "))
		return err
	}
	if m.plugin() {
		return m.kubectl.PrintTable(w, t, wide)
	}
	if err := writeTable(w, t, wide); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// writeTable lays t out as kubectl's table printer does, byte for byte (a
// test compares the two): upper-case headers, columns three spaces apart,
// each as wide as its widest cell even across a short row, a cell cut at
// its first line break ("..."), an escape character shown as ^[ so a cell
// cannot drive the terminal.
func writeTable(w io.Writer, t *metav1.Table, wide bool) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', tabwriter.RememberWidths)
	var visible []int
	for i, c := range t.ColumnDefinitions {
		if wide || c.Priority == 0 {
			visible = append(visible, i)
		}
	}
	// The header is padded to the widest cell as given, before a cut:
	// kubectl measures so, and its rows are written in flushes of
	// tableFlushRows whose widths the header sets.
	widths := make([]int, len(t.ColumnDefinitions))
	for _, r := range t.Rows {
		for i, cell := range r.Cells[:min(len(r.Cells), len(widths))] {
			if cell != nil {
				widths[i] = max(widths[i], len(cellText(cell)))
			}
		}
	}
	header := make([]string, 0, len(visible))
	for n, i := range visible {
		name := strings.ToUpper(t.ColumnDefinitions[i].Name)
		if n < len(visible)-1 && len(name) < widths[i] {
			name += strings.Repeat(" ", widths[i]-len(name))
		}
		header = append(header, name)
	}
	if _, err := fmt.Fprintln(tw, strings.Join(header, "\t")); err != nil {
		return err
	}
	for n, r := range t.Rows {
		var cells []string
		for i, cell := range r.Cells[:min(len(r.Cells), len(widths))] {
			if wide || t.ColumnDefinitions[i].Priority == 0 {
				cells = append(cells, tableCell(cell))
			}
		}
		if _, err := fmt.Fprintln(tw, strings.Join(cells, "\t")); err != nil {
			return err
		}
		if (n+1)%tableFlushRows == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return tw.Flush()
}

// tableFlushRows is how many rows kubectl's table printer lays out at once.
const tableFlushRows = 100

// cellText is a cell's text as given ("" for nil).
func cellText(cell any) string {
	switch v := cell.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// tableCell is one cell's text as shown: cut at its first line break,
// escape characters made visible.
func tableCell(cell any) string {
	s := cellText(cell)
	cut := false
	if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
		s, cut = s[:i], true
	}
	s = strings.ReplaceAll(s, "\x1b", "^[")
	if cut {
		s += "..."
	}
	return s
}

// listObject wraps rows that are not Kubernetes objects in a v1 List, as
// kubectl prints several objects.
func listObject[T any](rows []T) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	list.SetAPIVersion("v1")
	list.SetKind("List")
	list.Items = []unstructured.Unstructured{}
	for _, r := range rows {
		obj, err := jsonObject(r)
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: obj})
	}
	return list, nil
}

// jsonObject is v as a JSON object, numbers kept exact.
func jsonObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("write output: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("write output: %w", err)
	}
	return obj, nil
}

// columns is a Table's column definitions: name, and whether only -o wide
// shows it.
func columns(cols ...string) *metav1.Table {
	t := &metav1.Table{}
	for _, c := range cols {
		def := metav1.TableColumnDefinition{Name: strings.TrimSuffix(c, "+"), Type: "string"}
		if strings.HasSuffix(c, "+") {
			def.Priority = 1
		}
		t.ColumnDefinitions = append(t.ColumnDefinitions, def)
	}
	return t
}
