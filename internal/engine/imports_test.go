package engine_test

import (
	"bufio"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The engine decides and does no I/O (doc.go): it reaches no database
// driver, Kafka client or Kubernetes package, and of the project only the
// pure parts (docs/architecture.md: flight, sis, snapshot). The imports are read from
// the sources (go/build), transitively through the project's packages,
// so a driver reached through another package fails too.
func TestEngineImportsNoIO(t *testing.T) {
	t.Parallel()
	root, module := moduleRoot(t)
	self := module + "/internal/engine"
	allowed := []string{module + "/internal/flight", module + "/internal/sis", module + "/internal/snapshot"}
	forbidden := []string{"database/sql", "net", "net/http", "os/exec"}

	seen := map[string]bool{}
	var walk func(pkg string, via []string)
	walk = func(pkg string, via []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		p, err := build.Default.ImportDir(filepath.Join(root, strings.TrimPrefix(pkg, module)), 0)
		if err != nil {
			t.Fatalf("read %s: %v", pkg, err)
		}
		path := append(slices.Clone(via), pkg)
		for _, imp := range p.Imports {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				if pkg == self && !slices.Contains(allowed, imp) {
					t.Errorf("engine imports %s: only %v of the project", imp, allowed)
				}
				walk(imp, path)
			case !strings.Contains(strings.Split(imp, "/")[0], "."):
				// The standard library: pure but for its I/O packages.
				for _, f := range forbidden {
					if imp == f || strings.HasPrefix(imp, f+"/") {
						t.Errorf("engine reaches %s through %s", imp, strings.Join(path, " → "))
					}
				}
			default:
				// pgx, franz-go, the MySQL driver, k8s.io, or any other
				// module: none is the engine's.
				t.Errorf("engine reaches the module package %s through %s", imp, strings.Join(path, " → "))
			}
		}
	}
	walk(self, nil)
	if !seen[module+"/internal/flight"] {
		t.Fatalf("the walk did not reach internal/flight: it read nothing (%v)", seen)
	}
}

// moduleRoot finds go.mod above the test's directory and returns its
// directory and module path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer func() { _ = f.Close() }()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod names no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
