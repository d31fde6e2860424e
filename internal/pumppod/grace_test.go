package pumppod_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/pumpserver"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// graceMargin is what the pod's termination grace period must leave
// beyond the code's own bounds: process exit, a slow API server, the
// kubelet's SIGTERM delivery.
const graceMargin = 10 * time.Second

// The chart's terminationGracePeriodSeconds covers a graceful stop as the
// code bounds it: the pump's stop (StopTimeout), then the last status
// write and the Lease release (the renew deadline the chart sets), all
// inside the manager's graceful-shutdown timeout, plus a margin.
func TestChartGracePeriodCoversTheStop(t *testing.T) {
	chart := filepath.Join(kubetest.RepoRoot(t), "charts", "flightfeed")
	var values struct {
		Grace int `json:"terminationGracePeriodSeconds"`
		Lease struct {
			RenewDeadline string `json:"renewDeadline"`
		} `json:"lease"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(chart, "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	renew, err := time.ParseDuration(values.Lease.RenewDeadline)
	if err != nil {
		t.Fatal(err)
	}
	checkGrace(t, "the chart", time.Duration(values.Grace)*time.Second, renew)
}

// The kustomize tree's Deployment (config/manager) has the chart's
// terminationGracePeriodSeconds, and it covers a graceful stop with the
// renew deadline its own arguments set.
func TestKustomizeGracePeriodMatchesTheChart(t *testing.T) {
	root := kubetest.RepoRoot(t)
	var values struct {
		Grace int `json:"terminationGracePeriodSeconds"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, "charts", "flightfeed", "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, doc := range bytes.Split(readFile(t, filepath.Join(root, "config", "manager", "manager.yaml")), []byte("\n---")) {
		var d struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Grace      *int `json:"terminationGracePeriodSeconds"`
						Containers []struct {
							Args []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		found = true
		pod := d.Spec.Template.Spec
		if pod.Grace == nil {
			t.Fatalf("config/manager sets no terminationGracePeriodSeconds, the chart's is %d", values.Grace)
		}
		if *pod.Grace != values.Grace {
			t.Fatalf("config/manager terminationGracePeriodSeconds %d, the chart's is %d", *pod.Grace, values.Grace)
		}
		renew := pumppod.DefaultRenewDeadline
		for _, c := range pod.Containers {
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--renew-deadline="); ok {
					var err error
					if renew, err = time.ParseDuration(v); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		checkGrace(t, "config/manager", time.Duration(*pod.Grace)*time.Second, renew)
	}
	if !found {
		t.Fatal("config/manager/manager.yaml has no Deployment")
	}
}

// checkGrace fails unless grace covers the pump's stop and the last status
// write and Lease release (renew) within the manager's shutdown timeout,
// plus graceMargin.
func checkGrace(t *testing.T, where string, grace, renew time.Duration) {
	t.Helper()
	stop := pumppod.DefaultStopTimeout + renew
	if stop > pumpserver.DefaultShutdownTimeout {
		t.Fatalf("stopping a pump (%s) and writing the last status (%s) exceed the manager's shutdown timeout %s",
			pumppod.DefaultStopTimeout, renew, pumpserver.DefaultShutdownTimeout)
	}
	if need := max(stop, pumpserver.DefaultShutdownTimeout) + graceMargin; grace < need {
		t.Fatalf("%s: terminationGracePeriodSeconds %s < %s: the pump's stop %s + the last status and release %s, "+
			"within the shutdown timeout %s, + %s margin", where, grace, need, pumppod.DefaultStopTimeout, renew,
			pumpserver.DefaultShutdownTimeout, graceMargin)
	}
}
