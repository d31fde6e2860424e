package pumppod_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/internal/feedobjects"
	"github.com/flightfeed/flightfeed/internal/pumppod"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

// graceMargin is what the pod's termination grace period must leave
// beyond the code's own bounds: process exit, a slow API server, the
// kubelet's SIGTERM delivery.
const graceMargin = 10 * time.Second

// The pump pods' terminationGracePeriodSeconds in the chart (pump.*)
// covers a graceful stop as the code bounds it: the pump's stop
// (StopTimeout), then the last status write and the Lease release (the
// renew deadline the chart sets), all inside the pod manager's
// graceful-shutdown timeout, plus a margin.
func TestChartGracePeriodCoversTheStop(t *testing.T) {
	chart := filepath.Join(kubetest.RepoRoot(t), "charts", "flightfeed")
	var values struct {
		Pump struct {
			Grace int `json:"terminationGracePeriodSeconds"`
		} `json:"pump"`
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
	checkGrace(t, "the chart's pump pods", time.Duration(values.Pump.Grace)*time.Second, renew)
	// A Deployment made without the chart's defaults (the operator's own).
	checkGrace(t, "the operator's default", feedobjects.DefaultTerminationGracePeriod, pumppod.DefaultRenewDeadline)
}

// The kustomize tree's pump defaults (config/manager/pump_defaults.yaml)
// have the chart's grace period, and it covers a graceful stop with the
// renew deadline their own arguments set.
func TestKustomizeGracePeriodMatchesTheChart(t *testing.T) {
	root := kubetest.RepoRoot(t)
	var values struct {
		Pump struct {
			Grace int `json:"terminationGracePeriodSeconds"`
		} `json:"pump"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, "charts", "flightfeed", "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(root, "config", "manager", "pump_defaults.yaml")), &cm); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Grace string   `json:"terminationGracePeriod"`
		Args  []string `json:"args"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["defaults.yaml"]), &d); err != nil {
		t.Fatal(err)
	}
	grace, err := time.ParseDuration(d.Grace)
	if err != nil {
		t.Fatalf("config/manager/pump_defaults.yaml terminationGracePeriod %q: %v", d.Grace, err)
	}
	if grace != time.Duration(values.Pump.Grace)*time.Second {
		t.Fatalf("config/manager pump terminationGracePeriod %s, the chart's is %ds", grace, values.Pump.Grace)
	}
	renew := pumppod.DefaultRenewDeadline
	for _, a := range d.Args {
		if v, ok := strings.CutPrefix(a, "--renew-deadline="); ok {
			if renew, err = time.ParseDuration(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkGrace(t, "config/manager's pump pods", grace, renew)
}

// checkGrace fails unless grace covers the pump's stop and the last status
// write and Lease release (renew) within the manager's shutdown timeout,
// plus graceMargin.
func checkGrace(t *testing.T, where string, grace, renew time.Duration) {
	t.Helper()
	stop := pumppod.DefaultStopTimeout + renew
	if stop > pumppod.DefaultShutdownTimeout {
		t.Fatalf("stopping a pump (%s) and writing the last status (%s) exceed the manager's shutdown timeout %s",
			pumppod.DefaultStopTimeout, renew, pumppod.DefaultShutdownTimeout)
	}
	if need := max(stop, pumppod.DefaultShutdownTimeout) + graceMargin; grace < need {
		t.Fatalf("%s: terminationGracePeriodSeconds %s < %s: the pump's stop %s + the last status and release %s, "+
			"within the shutdown timeout %s, + %s margin", where, grace, need, pumppod.DefaultStopTimeout, renew,
			pumppod.DefaultShutdownTimeout, graceMargin)
	}
}
