// Command mutate is the project's mutation test: it changes one decision at a
// time in the pure decision packages (a comparison's boundary, an equality
// turned round, && for ||, an if's condition negated or its check removed, a
// search from the wrong end) and runs the package's tests against each change.
// A change no test notices (a surviving mutant) is a rule the tests do not
// hold.
//
//	go run ./hack/mutate                      every package below
//	go run ./hack/mutate -pkg internal/config  one of them
//	go run ./hack/mutate -list                 the mutants, not run
//
// How: every mutant of a package is compiled into one test binary at once
// (mutant schemata): each mutated expression becomes
// `(mutantID == N && (mutated)) || (mutantID != N && (original))`, selected
// at run time by FLIGHTFEED_MUTANT=N, through `go test -c -overlay` so the
// tree is never written. The binary runs once per mutant; a failing (or
// timed out) run kills it. It prints the score per package and every
// survivor with its place.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// target is one package under mutation: the files mutated (a glob inside
// the package's directory) and the tests run (a -test.run pattern, empty:
// all of them, in -short mode).
type target struct {
	dir   string
	files string
	run   string
}

// targets are the decision packages: pure, so their own tests run without
// a service.
var targets = []target{
	{dir: "internal/engine", files: "*.go"},
	{dir: "internal/snapshot", files: "*.go"},
	{dir: "internal/sis", files: "*.go"},
	{dir: "internal/config", files: "*.go"},
	{dir: "internal/pump", files: "failure*.go", run: failureTests},
}

// failureTests are the pump's pure failure-matrix tests (failure_test.go).
const failureTests = "^(TestClassify|TestAttemptTrace|TestRefusalSignature|TestBackoffGrowsWithJitterAndCap)$"

func main() {
	pkg := flag.String("pkg", "", "mutate only this package directory (e.g. internal/config)")
	list := flag.Bool("list", false, "list the mutants without running them")
	jobs := flag.Int("j", runtime.NumCPU(), "mutants run at once")
	out := flag.String("o", "", "also write the report (Markdown) to this file")
	flag.Parse()
	ctx := context.Background()
	var report bytes.Buffer
	failed := false
	for _, t := range targets {
		if *pkg != "" && strings.TrimSuffix(*pkg, "/") != t.dir {
			continue
		}
		res, err := mutatePackage(ctx, t, *list, *jobs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mutate %s: %v\n", t.dir, err)
			failed = true
			continue
		}
		n := report.Len()
		res.print(&report)
		_, _ = os.Stdout.Write(report.Bytes()[n:])
	}
	if *out != "" {
		if err := os.WriteFile(*out, report.Bytes(), 0o644); err != nil { //nolint:gosec // a report
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// mutant is one change at one place.
type mutant struct {
	id   int
	file string
	line int
	what string // e.g. "< → <="
	// start, end: the bytes of the expression replaced; text: its mutated
	// form (from the original text).
	start, end int
	text       string
	// kind of the expression: "bool" (wrapped with && / ||) or a Go type
	// for a call swapped (wrapped in a closure).
	kind string
}

// site is one expression with its mutants, which may hold further sites.
type site struct {
	start, end int
	kind       string
	mutants    []*mutant
}

type result struct {
	dir      string
	total    int
	killed   int
	survived []*mutant
	timedOut int
	listed   bool
}

func (r result) print(w *bytes.Buffer) {
	if r.listed {
		return
	}
	score := 100.0
	if r.total > 0 {
		score = 100 * float64(r.killed) / float64(r.total)
	}
	fmt.Fprintf(w, "%-18s %4d mutants  %4d killed  %3d survived  %5.1f %%\n", r.dir, r.total, r.killed, len(r.survived), score)
	for _, m := range r.survived {
		fmt.Fprintf(w, "    survived  %s:%d  %s\n", filepath.Join(r.dir, m.file), m.line, m.what)
	}
}

func mutatePackage(ctx context.Context, t target, list bool, jobs int) (result, error) {
	res := result{dir: t.dir, listed: list}
	files, err := filepath.Glob(filepath.Join(t.dir, t.files))
	if err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	overlay := map[string]string{}
	var all []*mutant
	pkgName := ""
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f) //nolint:gosec // the tree's own files
		if err != nil {
			return res, err
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			return res, err
		}
		if hasBuildConstraint(file) {
			continue
		}
		pkgName = file.Name.Name
		sites := findSites(fset, file, src, filepath.Base(f), len(all)+1)
		for _, s := range sites {
			all = append(all, s.mutants...)
		}
		if len(sites) == 0 {
			continue
		}
		mutated := instrument(src, sites)
		p := filepath.Join(tmp, fmt.Sprintf("%d.go", len(overlay)))
		if err := os.WriteFile(p, mutated, 0o600); err != nil {
			return res, err
		}
		abs, _ := filepath.Abs(f)
		overlay[abs] = p
	}
	res.total = len(all)
	if list {
		for _, m := range all {
			fmt.Printf("%s:%d\t#%d\t%s\n", filepath.Join(t.dir, m.file), m.line, m.id, m.what)
		}
		return res, nil
	}
	if len(all) == 0 {
		return res, nil
	}
	// The switch every mutated expression reads.
	sw := filepath.Join(tmp, "switch.go")
	if err := os.WriteFile(sw, []byte(fmt.Sprintf(switchFile, pkgName)), 0o600); err != nil {
		return res, err
	}
	absDir, _ := filepath.Abs(t.dir)
	overlay[filepath.Join(absDir, "zz_mutant_switch.go")] = sw
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		return res, err
	}
	bin := filepath.Join(tmp, "pkg.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-vet=off", "-overlay", ovPath, "-o", bin, "./"+t.dir) //nolint:gosec // fixed arguments
	if out, err := build.CombinedOutput(); err != nil {
		return res, fmt.Errorf("build the mutated tests: %w\n%s", err, out)
	}
	// The instrumented binary with no mutant active must pass: what it
	// takes is each run's time-out (10× that, at least 20 s).
	start := time.Now()
	if out, err := runMutant(ctx, bin, absDir, t.run, 0, 10*time.Minute); err != nil {
		return res, fmt.Errorf("the tests fail with no mutant active: %w\n%s", err, tail(out))
	}
	timeout := max(10*time.Since(start), 20*time.Second)
	var (
		mu   sync.Mutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range max(jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(all) {
					return
				}
				m := all[i]
				_, err := runMutant(ctx, bin, absDir, t.run, m.id, timeout)
				mu.Lock()
				switch {
				case err == nil:
					res.survived = append(res.survived, m)
				default:
					res.killed++
					if errors.Is(err, context.DeadlineExceeded) {
						res.timedOut++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(res.survived, func(i, j int) bool { return res.survived[i].id < res.survived[j].id })
	return res, nil
}

const switchFile = `package %s

import (
	"os"
	"strconv"
)

// mutantID selects the one mutant active in this run (0: none).
var mutantID = func() int { n, _ := strconv.Atoi(os.Getenv("FLIGHTFEED_MUTANT")); return n }()
`

func runMutant(ctx context.Context, bin, dir, run string, id int, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"-test.short", "-test.count=1", "-test.failfast"}
	if run != "" {
		args = append(args, "-test.run", run)
	}
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the binary just built
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("FLIGHTFEED_MUTANT=%d", id))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, err
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

var constraint = regexp.MustCompile(`^//go:build `)

func hasBuildConstraint(f *ast.File) bool {
	for _, g := range f.Comments {
		for _, c := range g.List {
			if constraint.MatchString(c.Text) {
				return true
			}
		}
	}
	return false
}

// swaps are the calls whose twin searches or tests from the other end.
var swaps = map[string]struct{ twin, kind string }{
	"strings.Index":         {"strings.LastIndex", "int"},
	"strings.LastIndex":     {"strings.Index", "int"},
	"strings.IndexByte":     {"strings.LastIndexByte", "int"},
	"strings.LastIndexByte": {"strings.IndexByte", "int"},
	"strings.HasPrefix":     {"strings.HasSuffix", "bool"},
	"strings.HasSuffix":     {"strings.HasPrefix", "bool"},
}

var opTwins = map[token.Token][]token.Token{
	token.LSS:  {token.LEQ},
	token.LEQ:  {token.LSS},
	token.GTR:  {token.GEQ},
	token.GEQ:  {token.GTR},
	token.EQL:  {token.NEQ},
	token.NEQ:  {token.EQL},
	token.LAND: {token.LOR},
	token.LOR:  {token.LAND},
}

// findSites lists the mutable expressions of a file, outside constant
// declarations, numbering their mutants from firstID.
func findSites(fset *token.FileSet, file *ast.File, src []byte, name string, firstID int) []*site {
	byspan := map[[2]int]*site{}
	var order []*site
	id := firstID
	add := func(n ast.Node, kind, what, text string) {
		s, e := fset.Position(n.Pos()).Offset, fset.Position(n.End()).Offset
		k := [2]int{s, e}
		st := byspan[k]
		if st == nil {
			st = &site{start: s, end: e, kind: kind}
			byspan[k] = st
			order = append(order, st)
		}
		if st.kind != kind {
			return
		}
		st.mutants = append(st.mutants, &mutant{id: id, file: name, line: fset.Position(n.Pos()).Line,
			what: what, start: s, end: e, text: text, kind: kind})
		id++
	}
	orig := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue // constants, types and variables: not decisions
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				return n.Tok != token.CONST
			case *ast.IfStmt:
				c := n.Cond
				add(c, "bool", fmt.Sprintf("if %s → if false (check removed)", short(orig(c))), "false")
				if _, isBin := c.(*ast.BinaryExpr); !isBin {
					add(c, "bool", fmt.Sprintf("if %s → if !(…) (negated)", short(orig(c))), "!("+orig(c)+")")
				}
			case *ast.BinaryExpr:
				for _, tw := range opTwins[n.Op] {
					s := fset.Position(n.Pos()).Offset
					opAt := fset.Position(n.OpPos).Offset - s
					o := orig(n)
					text := o[:opAt] + tw.String() + o[opAt+len(n.Op.String()):]
					add(n, "bool", fmt.Sprintf("%s → %s in %s", n.Op, tw, short(o)), text)
				}
			case *ast.CallExpr:
				fun := orig(n.Fun)
				sw, ok := swaps[fun]
				if !ok || sw.twin == "" || sw.kind == "" {
					return true
				}
				o := orig(n)
				add(n, sw.kind, fmt.Sprintf("%s → %s", fun, sw.twin), sw.twin+o[len(fun):])
			}
			return true
		})
	}
	return order
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// instrument writes the file with every site wrapped: the mutants' texts
// take the original text of the expression, the no-mutant branch its
// instrumented text (so that the sites inside it stay switchable).
func instrument(src []byte, sites []*site) []byte {
	sort.Slice(sites, func(i, j int) bool {
		if sites[i].start != sites[j].start {
			return sites[i].start < sites[j].start
		}
		return sites[i].end > sites[j].end
	})
	var render func(a, b int, skip *site) string
	render = func(a, b int, skip *site) string {
		var out strings.Builder
		pos := a
		for _, s := range sites {
			if s == skip || s.start < pos || s.end > b || s.start < a {
				continue
			}
			out.Write(src[pos:s.start])
			out.WriteString(wrap(s, render(s.start, s.end, s)))
			pos = s.end
		}
		out.Write(src[pos:b])
		return out.String()
	}
	return []byte(render(0, len(src), nil))
}

func wrap(s *site, inner string) string {
	if s.kind == "bool" {
		var b strings.Builder
		var none []string
		b.WriteString("(")
		for _, m := range s.mutants {
			fmt.Fprintf(&b, "(mutantID == %d && (%s)) || ", m.id, m.text)
			none = append(none, fmt.Sprintf("mutantID != %d", m.id))
		}
		fmt.Fprintf(&b, "(%s && (%s)))", strings.Join(none, " && "), inner)
		return b.String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "func() %s { ", s.kind)
	for _, m := range s.mutants {
		fmt.Fprintf(&b, "if mutantID == %d { return %s }; ", m.id, m.text)
	}
	fmt.Fprintf(&b, "return %s }()", inner)
	return b.String()
}
