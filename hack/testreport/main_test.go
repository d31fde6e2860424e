package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run of three packages: one passes, one skips a test, one fails a test.
const run = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestA"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"example.com/a","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestA","Elapsed":0}
{"Action":"pass","Package":"example.com/a","Elapsed":0.5}
{"Action":"run","Package":"example.com/b","Test":"TestNeedsDB"}
{"Action":"output","Package":"example.com/b","Test":"TestNeedsDB","Output":"=== RUN   TestNeedsDB\n"}
{"Action":"output","Package":"example.com/b","Test":"TestNeedsDB","Output":"    b_test.go:12: needs PostgreSQL (FLIGHTFEED_PUMP_BACKENDS=memory)\n"}
{"Action":"output","Package":"example.com/b","Test":"TestNeedsDB","Output":"--- SKIP: TestNeedsDB (0.00s)\n"}
{"Action":"skip","Package":"example.com/b","Test":"TestNeedsDB","Elapsed":0}
{"Action":"pass","Package":"example.com/b","Elapsed":0.1}
`

const failing = `{"Action":"run","Package":"example.com/c","Test":"TestBroken"}
{"Action":"output","Package":"example.com/c","Test":"TestBroken","Output":"    c_test.go:9: got 2, want 3\n"}
{"Action":"fail","Package":"example.com/c","Test":"TestBroken","Elapsed":0}
{"Action":"output","Package":"example.com/c","Output":"FAIL\n"}
{"Action":"fail","Package":"example.com/c","Elapsed":0.2}
`

func verdict(t *testing.T, in string, allowed map[key]bool) (bool, string) {
	t.Helper()
	r := newReport(allowed)
	var out bytes.Buffer
	if err := r.read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	bad := r.summary(&out)
	return bad, out.String()
}

func TestASkipNotOnTheListFailsTheRun(t *testing.T) {
	bad, out := verdict(t, run, nil)
	if !bad {
		t.Fatalf("an unexpected skip passed the run:\n%s", out)
	}
	for _, want := range []string{
		"ok  \texample.com/a",
		"SKIPPED, NOT ON THE ALLOW-LIST: example.com/b TestNeedsDB: needs PostgreSQL (FLIGHTFEED_PUMP_BACKENDS=memory)",
		"FAIL: 1 test(s) skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestAnAllowedSkipPasses(t *testing.T) {
	bad, out := verdict(t, run, map[key]bool{{"example.com/b", "TestNeedsDB"}: true})
	if bad {
		t.Fatalf("an allowed skip failed the run:\n%s", out)
	}
	if !strings.Contains(out, "skipped (allowed): example.com/b TestNeedsDB") {
		t.Errorf("the allowed skip is not listed:\n%s", out)
	}
}

func TestAFailedTestFailsTheRunWithItsOutput(t *testing.T) {
	bad, out := verdict(t, failing, nil)
	if !bad {
		t.Fatalf("a failed test passed the run:\n%s", out)
	}
	for _, want := range []string{"--- output of example.com/c TestBroken", "got 2, want 3", "FAIL\texample.com/c"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestABuildFailureFailsTheRun(t *testing.T) {
	in := `{"ImportPath":"example.com/d [example.com/d.test]","Action":"build-output","Output":"d.go:3:1: syntax error\n"}
{"ImportPath":"example.com/d [example.com/d.test]","Action":"build-fail"}
{"Action":"fail","Package":"example.com/d","Elapsed":0}
`
	bad, out := verdict(t, in, nil)
	if !bad || !strings.Contains(out, "syntax error") {
		t.Fatalf("a build failure: bad=%v\n%s", bad, out)
	}
}

func TestTheAllowListIsReadAndChecked(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	if err := os.WriteFile(good, []byte("# comment\n\nexample.com/b TestNeedsDB # why\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readAllowList(good)
	if err != nil || !got[key{"example.com/b", "TestNeedsDB"}] || len(got) != 1 {
		t.Fatalf("readAllowList = %v, %v", got, err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("TestNeedsDB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readAllowList(bad); err == nil {
		t.Fatal("a line without its package was accepted")
	}
}

// The repository's own list parses.
func TestTheRepositorysAllowListParses(t *testing.T) {
	if _, err := readAllowList("../test-skips.txt"); err != nil {
		t.Fatal(err)
	}
}
