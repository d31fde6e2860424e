package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
)

func TestBuildStatusReport(t *testing.T) {
	now := time.Date(2026, 9, 9, 10, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	micro := func(ago time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(-ago)); return &m }
	blocked := at(5 * time.Minute)
	feed := v1alpha1.FlightFeed{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "pek", Generation: 2},
		Spec: v1alpha1.FlightFeedSpec{Kafka: v1alpha1.KafkaSpec{Brokers: []string{"k1:9092", "k2:9092"},
			Topics: v1alpha1.KafkaTopics{State: "KAFKA_SCHD", Notice: "KAFKA_MSG"}}},
		Status: v1alpha1.FlightFeedStatus{
			ObservedGeneration: 1,
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, Reason: "HeadBlocked", Message: "row 42\nkeeps failing", LastTransitionTime: blocked},
				{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "KafkaDegraded", Message: "2 events parked; list them with `flightfeed parked`", LastTransitionTime: blocked},
				{Type: "KafkaReachable", Status: metav1.ConditionFalse, Reason: "Unreachable", Message: "dial tcp k1:9092: refused", LastTransitionTime: at(time.Minute)},
			},
			Pump: &v1alpha1.PumpStatus{Holder: "replica-a", Epoch: 7, HeadID: 42, HeadBlockedSince: &blocked, HeadLastError: "database unreachable",
				QueueDepth: 12, Lag: &metav1.Duration{Duration: 90 * time.Second}, MessagesPerSecond: "0.0", LastProcessedID: 41,
				Counts:         &v1alpha1.ResultCounts{Succeeded: 40, Dead: 3},
				FailedRequests: []v1alpha1.FailedRequestStatus{{Day: "2026-09-11", MessageID: 77, Rejection: "MIXED_OPERATION_DAYS: records of 2026-09-11\nand 2026-09-12"}}},
			Outbox:        &v1alpha1.OutboxStatus{Pending: 5, OldestAge: metav1.Duration{Duration: 2 * time.Minute}},
			PumpPods:      &v1alpha1.PumpPodsStatus{Deployment: "pek-pump", Replicas: 2, ReadyReplicas: 1, Ready: "1/2", UpdatedReplicas: 2, Generation: 1},
			SchemaVersion: 14,
		},
	}
	lease := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-a"), LeaseDurationSeconds: ptr.To[int32](15),
		AcquireTime: micro(time.Hour), RenewTime: micro(3 * time.Second), LeaseTransitions: ptr.To[int32](2)}}
	day := func(d string, version, last, flights int64) v1alpha1.FlightFeedDay {
		return v1alpha1.FlightFeedDay{Spec: v1alpha1.FlightFeedDaySpec{FeedName: "pek", Day: d},
			Status: v1alpha1.FlightFeedDayStatus{Version: version, LastMessageID: last, Flights: flights}}
	}
	event := func(reason, msg string, ago time.Duration) corev1.Event {
		return corev1.Event{Reason: reason, Message: msg, EventTime: *micro(ago), Type: corev1.EventTypeWarning}
	}
	in := statusInput{
		Feed:  feed,
		Lease: lease,
		Days:  []v1alpha1.FlightFeedDay{day("2026-09-10", 1, 30, 5), day("2026-09-09", 2, 20, 4)},
		Events: []corev1.Event{
			event("DeadMessage", "mailbox row 3: BAD_XML: oldest", 30*time.Minute),
			event("HeadBlocked", "mailbox row 42 keeps failing", 5*time.Minute),
			event("DayMismatch", "mailbox row 9: SAME_FLID_ACROSS_OPERATION_DAYS: newest", time.Minute),
			event("DeadMessage", "mailbox row 5: BAD_FLID: middle", 10*time.Minute),
		},
	}

	r := buildStatusReport(in, 2, now)
	if r.Feed != "ops/pek" || r.Leader.Holder != "replica-a" || r.Leader.Epoch != 7 || r.Leader.LeaseAge.Duration != 3*time.Second ||
		r.Leader.Expired || r.Leader.Transitions != 2 {
		t.Errorf("leader %+v", r.Leader)
	}
	if r.Kafka.Reachable != metav1.ConditionFalse || r.Kafka.Reason != "Unreachable" || len(r.Kafka.Brokers) != 2 {
		t.Errorf("kafka %+v", r.Kafka)
	}
	var dead []string
	for _, d := range r.Dead {
		dead = append(dead, d.Reason+" "+d.Message)
	}
	if d := cmp.Diff([]string{"DayMismatch mailbox row 9: SAME_FLID_ACROSS_OPERATION_DAYS: newest", "DeadMessage mailbox row 5: BAD_FLID: middle"}, dead); d != "" {
		t.Errorf("dead messages, newest two (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]ledgerReport{{Day: "2026-09-09", Version: 2, LastMessageID: 20, Flights: 4}, {Day: "2026-09-10", Version: 1, LastMessageID: 30, Flights: 5}}, r.Ledger); d != "" {
		t.Errorf("ledger, days ascending (-want +got):\n%s", d)
	}

	var buf bytes.Buffer
	if err := writeStatusText(&buf, []statusReport{r}, now); err != nil {
		t.Fatal(err)
	}
	text := spaced(buf.String())
	for _, want := range []string{
		"FlightFeed ops/pek Ready False (HeadBlocked)",
		"the status describes generation 1; the spec is at 2",
		"replica-a, epoch 7, lease renewed 3s ago (valid 15s), leading since 60m ago, 2 transitions",
		"head row 42, lag 1m30s, queue 12, 0.0 msg/s, last processed row 41",
		"BLOCKED since 5m ago: database unreachable",
		"succeeded 40, skipped 0, dead 3, failed 0",
		"REQUEST FAILED for 2026-09-11 (message 77): MIXED_OPERATION_DAYS: records of 2026-09-11 and 2026-09-12; not asked again until `flightfeed rerequest --feed ops/pek --day 2026-09-11`",
		"list them with `flightfeed parked --feed ops/pek`",
		"Pump pods: 1/2 ready, 2 updated, 2 desired (Deployment pek-pump), rolled out generation 1",
		"Schema: version 14",
		"5 pending, oldest 2m",
		"k1:9092,k2:9092 → KAFKA_SCHD, KAFKA_MSG; reachable False (Unreachable): dial tcp k1:9092: refused",
		"row 42 keeps failing", // a condition's message on one line
		"mailbox row 9: SAME_FLID_ACROSS_OPERATION_DAYS: newest",
		"2026-09-09 2 20 4 -",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "BAD_XML") {
		t.Errorf("text lists more DEAD messages than asked for:\n%s", text)
	}
	// The plugin suggests its own command lines.
	buf.Reset()
	if err := writeStatusTextMode(&buf, pluginMode(pluginKubectl), []statusReport{r}, now, maxStatusText); err != nil {
		t.Fatal(err)
	}
	text = spaced(buf.String())
	for _, want := range []string{"not asked again until `kubectl flightfeed rerequest pek -n ops --day 2026-09-11`",
		"list them with `kubectl flightfeed parked pek -n ops`"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plugin's text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(strings.ReplaceAll(text, "kubectl flightfeed", ""), "flightfeed ") {
		t.Errorf("the plugin's text suggests the flightfeed binary's commands:\n%s", text)
	}

	// A Lease not renewed within its duration is shown as expired; no
	// Lease at all is no leader.
	in.Lease.Spec.RenewTime = micro(20 * time.Second)
	if r := buildStatusReport(in, 2, now); !r.Leader.Expired {
		t.Errorf("a Lease renewed 20s ago with a 15s duration is not expired: %+v", r.Leader)
	}
	in.Lease = nil
	buf.Reset()
	if err := writeStatusText(&buf, []statusReport{buildStatusReport(in, 0, now)}, now); err != nil {
		t.Fatal(err)
	}
	if text := spaced(buf.String()); !strings.Contains(text, "Leader: none") || !strings.Contains(text, "DEAD messages: none") {
		t.Errorf("no lease, no dead messages asked for:\n%s", text)
	}
}

// spaced collapses the table's alignment to single spaces.
func spaced(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestParseFeedKey(t *testing.T) {
	for arg, want := range map[string]string{"pek": "ctx-ns/pek", "ops/pek": "ops/pek", "": "", "/pek": "", "ops/": "", "a/b/c": ""} {
		key, err := parseFeedKey(arg, "ctx-ns")
		if got := key.String(); (err == nil && got != want) || (err != nil) != (want == "") {
			t.Errorf("parseFeedKey(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}
}

// The plugin's binary (cmd/kubectl-flightfeed, as make plugin builds it)
// installed on the PATH is the kubectl plugin "kubectl flightfeed": kubectl
// finds it and it names itself so. The flightfeed binary installed under
// the plugin's name, as earlier releases had it, says it is not the plugin
// and what to install instead, and runs nothing.
func TestKubectlPlugin(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed (apt-get install -y kubectl): %v", err)
	}
	dir := t.TempDir()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", filepath.Join(dir, PluginName), "./cmd/kubectl-flightfeed")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kubectl-flightfeed: %v\n%s", err, out)
	}
	path := "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd := exec.CommandContext(t.Context(), kubectl, "flightfeed", "status", "--help")
	cmd.Env = append(os.Environ(), path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl flightfeed status --help: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "\n  kubectl flightfeed status [NAME] [-A] [-w] [-o wide|json|yaml]") {
		t.Errorf("the plugin's usage does not name it kubectl flightfeed:\n%s", out)
	}
	// kubectl flightfeed --help shows the user commands only.
	cmd = exec.CommandContext(t.Context(), kubectl, "flightfeed", "--help")
	cmd.Env = append(os.Environ(), path)
	if out, err = cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl flightfeed --help: %v\n%s", err, out)
	}
	for _, c := range []string{"manager", "pump", "simulate"} {
		if strings.Contains(string(out), "\n  "+c+" ") || !strings.Contains(string(out), "\n  status ") {
			t.Errorf("kubectl flightfeed --help lists %s (or not status):\n%s", c, out)
		}
	}

	// The flightfeed binary (this test binary runs its main) under the
	// plugin's name.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := t.TempDir()
	if err := os.Symlink(self, filepath.Join(old, PluginName)); err != nil {
		t.Fatal(err)
	}
	cmd = exec.CommandContext(t.Context(), kubectl, "flightfeed", "status", "--help")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PATH="+old+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err = cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage ||
		!strings.Contains(string(out), "not the kubectl plugin: install kubectl-flightfeed") || strings.Contains(string(out), "Usage:") {
		t.Errorf("the flightfeed binary as kubectl-flightfeed: %v\n%s", err, out)
	}
	if code, out, _ := runCLI("status", "--help"); code != 0 || !strings.Contains(out, "\n  flightfeed status [--kubeconfig K]") {
		t.Errorf("flightfeed status --help (exit %d):\n%s", code, out)
	}
}
