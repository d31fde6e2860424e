package controllers_test

import (
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/controllers"
	"github.com/flightfeed/flightfeed/internal/operator"
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
	grace := time.Duration(values.Grace) * time.Second
	stop := controllers.DefaultStopTimeout + renew
	if stop > operator.DefaultShutdownTimeout {
		t.Fatalf("stopping a pump (%s) and writing the last status (%s) exceed the manager's shutdown timeout %s",
			controllers.DefaultStopTimeout, renew, operator.DefaultShutdownTimeout)
	}
	if need := max(stop, operator.DefaultShutdownTimeout) + graceMargin; grace < need {
		t.Fatalf("terminationGracePeriodSeconds %s < %s: the pump's stop %s + the last status and release %s, "+
			"within the shutdown timeout %s, + %s margin", grace, need, controllers.DefaultStopTimeout, renew,
			operator.DefaultShutdownTimeout, graceMargin)
	}
}
