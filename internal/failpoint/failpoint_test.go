package failpoint_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flightfeed/flightfeed/internal/failpoint"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    failpoint.Arming
		wantErr string
	}{
		{spec: "", want: failpoint.Arming{}},
		{spec: " , ", want: failpoint.Arming{}},
		{spec: "after-commit@3", want: failpoint.Arming{"after-commit": 3}},
		{spec: "after-commit", want: failpoint.Arming{"after-commit": 1}},
		{spec: " after-decode@40 , status-write@7 ", want: failpoint.Arming{"after-decode": 40, "status-write": 7}},
		{spec: "before-commit@ 2", want: failpoint.Arming{"before-commit": 2}},
		{spec: "after-write-back@1,after-kafka-commit@1000000", want: failpoint.Arming{"after-write-back": 1, "after-kafka-commit": 1000000}},
		{spec: "after-comit@3", wantErr: `unknown fail point "after-comit"`},
		{spec: "AFTER-COMMIT@3", wantErr: "unknown fail point"},
		{spec: "after-commit@0", wantErr: "must be a positive integer"},
		{spec: "after-commit@-1", wantErr: "must be a positive integer"},
		{spec: "after-commit@x", wantErr: "must be a positive integer"},
		{spec: "after-commit@", wantErr: "must be a positive integer"},
		{spec: "after-commit@3@4", wantErr: "must be a positive integer"},
		{spec: "after-commit@3,after-commit@4", wantErr: "armed twice"},
		{spec: "@3", wantErr: "unknown fail point"},
	} {
		got, err := failpoint.Parse(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want error containing %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.spec, diff)
		}
		if back, err := failpoint.Parse(got.String()); err != nil || !cmp.Equal(back, got) {
			t.Errorf("Parse(%q).String() = %q does not parse back: %v, %v", tc.spec, got.String(), back, err)
		}
	}
}

// Every name of the package documentation is a known point, once.
func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range failpoint.Names() {
		if seen[n] {
			t.Errorf("%s listed twice", n)
		}
		seen[n] = true
		if _, err := failpoint.Parse(n); err != nil {
			t.Errorf("Parse(%q): %v", n, err)
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d fail points, want the 6 the reliability suite crashes at", len(seen))
	}
}

const childEnv = "FLIGHTFEED_FAILPOINT_TEST_CHILD"

// The test binary run again as a child hits after-commit five times,
// armed at the third: built with the tag it dies of SIGKILL there, having
// said so; without the tag the arming is ignored and it exits 0.
func TestHitCrashesAtTheArmedHit(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		for i := 1; i <= 5; i++ {
			os.Stdout.WriteString("before hit\n")
			failpoint.Hit(failpoint.AfterDecode) // not armed: never crashes
			failpoint.Hit(failpoint.AfterCommit)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitCrashesAtTheArmedHit$")
	cmd.Env = append(os.Environ(), childEnv+"=1", failpoint.Env+"=after-commit@3")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	hits := strings.Count(stdout.String(), "before hit")
	if !failpoint.Enabled {
		if err != nil || hits != 5 {
			t.Fatalf("without the reliability tag: child %v after %d hits, want exit 0 after 5\n%s", err, hits, stderr.String())
		}
		return
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want killed\n%s", err, stderr.String())
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended %v, want killed by SIGKILL\n%s", ee, stderr.String())
	}
	if hits != 3 || !strings.Contains(stderr.String(), "failpoint: after-commit hit 3: crashing") {
		t.Fatalf("child crashed after %d hits, want 3; stderr:\n%s", hits, stderr.String())
	}
}

// A malformed arming stops the tagged binary at start (status 2).
func TestBadArmingStopsTaggedBinary(t *testing.T) {
	if !failpoint.Enabled {
		t.Skip("only the reliability build reads " + failpoint.Env)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), failpoint.Env+"=after-comit@3")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "unknown fail point") {
		t.Fatalf("child with a misspelt point: %v\n%s", err, out)
	}
}

// An armed panic point panics the number of times it was armed for, then
// is quiet again; disarmed, it is quiet at once.
func TestArmPanic(t *testing.T) {
	hit := func() (panicked bool) {
		defer func() {
			if v := recover(); v != nil {
				pv, ok := v.(failpoint.PanicValue)
				if !ok || pv.Point != failpoint.ReadAhead {
					t.Fatalf("panicked with %v", v)
				}
				panicked = true
			}
		}()
		failpoint.Panic(failpoint.ReadAhead)
		return false
	}
	if hit() {
		t.Fatal("a point nobody armed panicked")
	}
	disarm := failpoint.ArmPanic(failpoint.ReadAhead, 2)
	failpoint.Panic(failpoint.OutboxFlush) // another point: quiet
	first, second, third := hit(), hit(), hit()
	if !first || !second || third {
		t.Fatal("armed for 2 hits: want panic, panic, quiet")
	}
	disarm()
	disarm = failpoint.ArmPanic(failpoint.ReadAhead, 5)
	disarm()
	if hit() {
		t.Fatal("a disarmed point panicked")
	}
}
