package pump_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightfeed/flightfeed/internal/pump"
	"github.com/flightfeed/flightfeed/internal/pumpdata"
)

// A lifecycle Job names exactly one job: a store must not guess which of
// two it was asked for, nor run none.
func TestJobNamesExactlyOneJob(t *testing.T) {
	t.Parallel()
	cut := &pumpdata.HistoryCutoffs{}
	day := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		job  pump.Job
		ok   bool
	}{
		{"history", pump.Job{History: cut, Limit: 500}, true},
		{"NULL-day retention", pump.Job{NullDayBefore: day, Limit: 500}, true},
		{"ledger retention", pump.Job{LedgerBefore: "2026-09-01"}, true},
		{"none", pump.Job{Limit: 500}, false},
		{"history and ledger", pump.Job{History: cut, LedgerBefore: "2026-09-01"}, false},
		{"NULL-day and ledger", pump.Job{NullDayBefore: day, LedgerBefore: "2026-09-01"}, false},
		{"all three", pump.Job{History: cut, NullDayBefore: day, LedgerBefore: "2026-09-01"}, false},
	}
	for _, c := range cases {
		if err := c.job.Check(); (err == nil) != c.ok {
			t.Errorf("%s: Check() = %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// The pump's ports are its own: none of its product files imports a
// driver or an adapter (store, mailbox, recsize, the dispatcher), nor the
// configuration package, which parses DSNs with the drivers; they speak
// pumpdata and engine, so the memory backend (pumptest) can stand in for
// the real adapters (internal/pump/pgstore, *mailbox.Mailbox,
// *recsize.Measure), which feedrun wires. The depguard rule "pump" in
// .golangci.yml says the same to the linter.
func TestThePumpImportsNoAdapter(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"github.com/flightfeed/flightfeed/internal/store",
		"github.com/flightfeed/flightfeed/internal/mailbox",
		"github.com/flightfeed/flightfeed/internal/recsize",
		"github.com/flightfeed/flightfeed/internal/dispatch",
		"github.com/flightfeed/flightfeed/internal/config",
		"github.com/jackc/pgx",
		"github.com/go-sql-driver/mysql",
		"github.com/twmb/franz-go",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("read %d files: not the package's directory", len(files))
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			for _, pkg := range forbidden {
				if path == pkg || strings.HasPrefix(path, pkg+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}

// The ports stay small: at most 6 interfaces and 30 methods in
// all, Inbox included, counted from ports.go (embedded interfaces count
// once, where they are declared).
func TestPortsStaySmall(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "ports.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	interfaces, methods := 0, 0
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gen.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			it, ok := ts.Type.(*ast.InterfaceType)
			if !ok {
				continue
			}
			interfaces++
			for _, m := range it.Methods.List {
				methods += len(m.Names) // an embedded interface has none
			}
		}
	}
	t.Logf("%d interfaces, %d methods", interfaces, methods)
	if interfaces == 0 || interfaces > 6 || methods > 30 {
		t.Fatalf("the ports have %d interfaces and %d methods: at most 6 and 30", interfaces, methods)
	}
}
