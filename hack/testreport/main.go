// Command testreport reads `go test -json` on its standard input and prints
// what a person reads of a test run: one line per package, the whole output
// of every test that failed, and every skip with its reason. It exits 1 when
// a test or a build failed, or when a test skipped that the allow-list does
// not name: a skip hides everything its test would have checked, so the full
// run (hack/test.sh) accepts only the skips the repository agreed to.
//
//	go test -json ./... | go run ./hack/testreport -allow hack/test-skips.txt
//
// The allow-list has one skip per line, "PACKAGE TEST" (a subtest with its
// parent: TestA/case), then a reason after "#"; blank lines and lines
// starting with "#" are ignored.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

type key struct{ pkg, test string }

// report is what was read, and the verdict on it.
type report struct {
	allowed map[key]bool
	output  map[key][]string // per test, and per package (test "")
	failed  []key
	skipped []key
	why     map[key]string
	builds  []string // build output of packages that did not build
	bad     bool
}

func main() {
	allow := flag.String("allow", "", "the allow-list of skips (PACKAGE TEST per line); empty: no skip is allowed")
	flag.Parse()
	allowed := map[key]bool{}
	if *allow != "" {
		var err error
		if allowed, err = readAllowList(*allow); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	r := newReport(allowed)
	if err := r.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if r.summary(os.Stdout) {
		os.Exit(1)
	}
}

func readAllowList(path string) (map[key]bool, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the repository's own list
	if err != nil {
		return nil, fmt.Errorf("read the allow-list: %w", err)
	}
	out := map[key]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		if c := strings.Index(line, "#"); c >= 0 {
			line = line[:c]
		}
		f := strings.Fields(line)
		switch len(f) {
		case 0:
			continue
		case 2:
			out[key{f[0], f[1]}] = true
		default:
			return nil, fmt.Errorf("%s:%d: want \"PACKAGE TEST # reason\", got %q", path, i+1, line)
		}
	}
	return out, nil
}

func newReport(allowed map[key]bool) *report {
	return &report{allowed: allowed, output: map[key][]string{}, why: map[key]string{}}
}

// read consumes the events, printing each package's line as it ends.
func (r *report) read(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go vet or the linker writing directly): kept.
			fmt.Fprintln(out, string(line))
			continue
		}
		r.take(e, out)
	}
	return sc.Err()
}

func (r *report) take(e event, out io.Writer) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		r.builds = append(r.builds, strings.TrimRight(e.Output, "\n"))
	case "build-fail":
		r.bad = true
	case "output":
		r.output[k] = append(r.output[k], e.Output)
	case "skip":
		if e.Test == "" {
			return // a package without test files
		}
		r.skipped = append(r.skipped, k)
		r.why[k] = skipReason(r.output[k])
		if !r.allowed[k] {
			r.bad = true
		}
	case "fail":
		r.bad = true
		if e.Test != "" {
			r.failed = append(r.failed, k)
			return
		}
		for _, t := range r.failed {
			if t.pkg == e.Package {
				fmt.Fprintf(out, "--- output of %s %s\n%s", t.pkg, t.test, strings.Join(r.output[t], ""))
			}
		}
		pkgOut := strings.Join(r.output[k], "")
		fmt.Fprintf(out, "%s", pkgOut)
		if !strings.Contains(pkgOut, "FAIL\t"+e.Package) {
			fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		r.forget(e.Package)
	case "pass":
		if e.Test == "" {
			fmt.Fprintf(out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			r.forget(e.Package)
		}
	}
}

// forget drops a finished package's output (a full run holds thousands of
// tests' lines otherwise).
func (r *report) forget(pkg string) {
	for k := range r.output {
		if k.pkg == pkg {
			delete(r.output, k)
		}
	}
}

// skipReason is the line the test's t.Skip wrote: the last output line
// before "--- SKIP", without the file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, after, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(after)], ".go:") {
			return after
		}
		return l
	}
	return ""
}

// summary prints the build failures and the skips; true when the run fails.
func (r *report) summary(out io.Writer) bool {
	if len(r.builds) > 0 {
		fmt.Fprintf(out, "--- build output\n%s\n", strings.Join(r.builds, "\n"))
	}
	sort.Slice(r.skipped, func(i, j int) bool {
		a, b := r.skipped[i], r.skipped[j]
		return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
	})
	unexpected := 0
	for _, k := range r.skipped {
		mark := "skipped (allowed)"
		if !r.allowed[k] {
			mark = "SKIPPED, NOT ON THE ALLOW-LIST"
			unexpected++
		}
		fmt.Fprintf(out, "%s: %s %s: %s\n", mark, k.pkg, k.test, r.why[k])
	}
	if unexpected > 0 {
		fmt.Fprintf(out, "FAIL: %d test(s) skipped that hack/test-skips.txt does not allow: a skip hides what the test checks; fix its cause or add it to the list with the reason\n", unexpected)
	}
	if len(r.failed) > 0 {
		fmt.Fprintf(out, "FAIL: %d test(s) failed\n", len(r.failed))
	}
	return r.bad
}
