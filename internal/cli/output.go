package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
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
	if m == pluginMode {
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
		if m == binaryMode && format == outJSON {
			return writeJSONLines(bw, rows)
		}
		list, err := listObject(rows)
		if err != nil {
			return err
		}
		if err := printObject(bw, format, list); err != nil {
			return err
		}
		return flush(bw)
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: row(r)})
	}
	if err := printTable(bw, t, format == outWide); err != nil {
		return err
	}
	return flush(bw)
}

// printTable prints t with cli-runtime's table printer (kubectl's):
// priority-1 columns only when wide. An empty table still prints its
// header, which the printer leaves out, so a script sees the columns.
func printTable(w io.Writer, t *metav1.Table, wide bool) error {
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
	if err := printers.NewTablePrinter(printers.PrintOptions{Wide: wide}).PrintObj(t, w); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// printObject prints obj (its kind set) with cli-runtime's JSON or YAML
// printer.
func printObject(w io.Writer, format string, obj runtime.Object) error {
	var p printers.ResourcePrinter = &printers.JSONPrinter{}
	if format == outYAML {
		p = &printers.YAMLPrinter{}
	}
	if err := p.PrintObj(obj, w); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
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
