package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/hack/bench/benchdb"
	"github.com/flightfeed/flightfeed/hack/bench/rounds"
)

// idleOptions times the idle measurement (-idle, -settle, -rounds,
// -baseline).
type idleOptions struct {
	bin, baseline  string
	window, settle time.Duration
	rounds         int
}

// idleCost is what one binary's pump pods of one idle feed cost: CPU in
// millicores from utime+stime (whole ticks of 10 ms), the same from the
// threads' schedstat (nanoseconds: what resolves a standby's fraction of a
// millicore) and wake-ups a second (the threads' context switches, which
// the machine's load moves far less than the CPU each one costs).
type idleCost struct {
	leader, standby           float64 // millicores, /proc/PID/stat
	leaderNS, standbyNS       float64 // millicores, schedstat
	leaderWakes, standbyWakes float64 // context switches a second
}

// userHZ is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100
// on every Linux architecture Go builds for).
const userHZ = 100

// measureIdle measures, for the binary under test (and the baseline in
// alternation, when given), the CPU of a LEADER pump pod of an idle feed
// (`flightfeed pump --feed`, its PostgreSQL, MariaDB mailbox and Kafka
// broker reachable) and of a STANDBY pod of the same feed, over the window
// after settle, in millicores; kubelet's probes are played at the
// Deployment's periods (/readyz every 5 s, /healthz every 10 s).
func measureIdle(ctx context.Context, c client.Client, kubeconfig, ns string, o idleOptions) error {
	bins := map[string]string{"test": o.bin}
	if o.baseline != "" {
		bins["baseline"] = o.baseline
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "KAFKA_SCHD", "KAFKA_MSG"))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer broker.Close()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("# idle pump pods: %d round(s), settle %s, window %s, load %s", o.rounds, o.settle, o.window, load)
	got := map[string][]idleCost{}
	for r := 1; r <= o.rounds; r++ {
		for _, which := range rounds.Order(r, o.baseline != "") {
			name := fmt.Sprintf("idle%d%s", r, which[:1])
			cost, err := idleFeed(ctx, c, kubeconfig, ns, name, bins[which], broker.ListenAddrs(), o)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, which, err)
			}
			fmt.Printf("round %d %-8s leader %6.2f mcores, standby %6.2f mcores; schedstat leader %6.3f, standby %6.3f mcores; wake-ups/s leader %5.1f, standby %5.1f\n",
				r, which, cost.leader, cost.standby, cost.leaderNS, cost.standbyNS, cost.leaderWakes, cost.standbyWakes)
			got[which] = append(got[which], cost)
		}
	}
	t := medianCost(got["test"])
	line := func(c idleCost) string {
		return fmt.Sprintf("leader %.2f mcores, standby %.2f mcores; schedstat leader %.3f, standby %.3f mcores; wake-ups/s leader %.1f, standby %.1f",
			c.leader, c.standby, c.leaderNS, c.standbyNS, c.leaderWakes, c.standbyWakes)
	}
	fmt.Printf("idle pump pod (median of %d): %s\n", len(got["test"]), line(t))
	if o.baseline != "" {
		b := medianCost(got["baseline"])
		fmt.Printf("baseline      (median of %d): %s\n", len(got["baseline"]), line(b))
		fmt.Printf("ratio (under test / baseline): leader %.3f, standby %.3f; schedstat leader %.3f, standby %.3f; wake-ups leader %.3f, standby %.3f\n",
			rounds.Ratio(t.leader, b.leader), rounds.Ratio(t.standby, b.standby), rounds.Ratio(t.leaderNS, b.leaderNS),
			rounds.Ratio(t.standbyNS, b.standbyNS), rounds.Ratio(t.leaderWakes, b.leaderWakes), rounds.Ratio(t.standbyWakes, b.standbyWakes))
	}
	return nil
}

func medianCost(cs []idleCost) idleCost {
	return idleCost{
		leader:       rounds.Median(cs, func(c idleCost) float64 { return c.leader }),
		standby:      rounds.Median(cs, func(c idleCost) float64 { return c.standby }),
		leaderNS:     rounds.Median(cs, func(c idleCost) float64 { return c.leaderNS }),
		standbyNS:    rounds.Median(cs, func(c idleCost) float64 { return c.standbyNS }),
		leaderWakes:  rounds.Median(cs, func(c idleCost) float64 { return c.leaderWakes }),
		standbyWakes: rounds.Median(cs, func(c idleCost) float64 { return c.standbyWakes }),
	}
}

// idleFeed makes the feed name on fresh databases, starts its leader and
// then its standby with bin, and measures both.
func idleFeed(ctx context.Context, c client.Client, kubeconfig, ns, name, bin string, brokers []string, o idleOptions) (idleCost, error) {
	pg, my := "ff_bench_"+name+"_"+strconv.Itoa(os.Getpid()), "ff_bench_"+name+"_mbx_"+strconv.Itoa(os.Getpid())
	pdsn, err := benchdb.CreatePG(ctx, pg)
	if err != nil {
		return idleCost{}, err
	}
	defer func() { _ = benchdb.DropPG(context.WithoutCancel(ctx), pg) }()
	mdsn, err := benchdb.CreateMailbox(ctx, my)
	if err != nil {
		return idleCost{}, err
	}
	defer func() { _ = benchdb.DropMailbox(context.WithoutCancel(ctx), my) }()
	for suffix, dsn := range map[string]string{"-mailbox": mdsn, "-db": pdsn} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + suffix, Namespace: ns,
			Labels: map[string]string{v1alpha1.SecretLabel: "true"}, Annotations: map[string]string{v1alpha1.FeedsAnnotation: name}},
			StringData: map[string]string{"dsn": dsn}}); err != nil {
			return idleCost{}, err
		}
	}
	ff := feed(ns, name)
	ff.Spec.Kafka.Brokers = brokers
	if err := c.Create(ctx, ff); err != nil {
		return idleCost{}, err
	}
	defer func() { _ = c.Delete(context.WithoutCancel(ctx), ff) }()
	key := types.NamespacedName{Namespace: ns, Name: name}

	leader, err := startPod(ctx, bin, kubeconfig, key, name+"-a")
	if err != nil {
		return idleCost{}, err
	}
	defer func() { _ = leader.stop() }()
	if err := waitLeader(ctx, c, key, name+"-a", leader); err != nil {
		return idleCost{}, err
	}
	standby, err := startPod(ctx, bin, kubeconfig, key, name+"-b")
	if err != nil {
		return idleCost{}, err
	}
	defer func() { _ = standby.stop() }()
	probes, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	go leader.probe(probes)
	go standby.probe(probes)
	time.Sleep(o.settle)
	l0, err := cpuTicks(leader.cmd.Process.Pid)
	if err != nil {
		return idleCost{}, err
	}
	s0, err := cpuTicks(standby.cmd.Process.Pid)
	if err != nil {
		return idleCost{}, err
	}
	lt0, st0 := threadTotals(leader.cmd.Process.Pid), threadTotals(standby.cmd.Process.Pid)
	start := time.Now()
	time.Sleep(o.window)
	l1, err := cpuTicks(leader.cmd.Process.Pid)
	if err != nil {
		return idleCost{}, err
	}
	s1, err := cpuTicks(standby.cmd.Process.Pid)
	if err != nil {
		return idleCost{}, err
	}
	lt1, st1 := threadTotals(leader.cmd.Process.Pid), threadTotals(standby.cmd.Process.Pid)
	took := time.Since(start).Seconds()
	// Still the leader: a measurement of a pod that lost the Lease would
	// be a standby's.
	var now v1alpha1.FlightFeed
	if err := c.Get(ctx, key, &now); err != nil {
		return idleCost{}, err
	}
	if now.Status.Pump == nil || now.Status.Pump.Holder != name+"-a" {
		return idleCost{}, fmt.Errorf("%s no longer leads the feed (status %+v)\n%s", name+"-a", now.Status.Pump, leader.tail())
	}
	mcores := func(t0, t1 int64) float64 { return float64(t1-t0) / userHZ / took * 1000 }
	return idleCost{leader: mcores(l0, l1), standby: mcores(s0, s1),
		leaderNS: lt1.cpuNS.since(lt0.cpuNS) / 1e6 / took, standbyNS: st1.cpuNS.since(st0.cpuNS) / 1e6 / took,
		leaderWakes: lt1.switches.since(lt0.switches) / took, standbyWakes: st1.switches.since(st0.switches) / took}, nil
}

// threadCounts are per-thread totals of a process, by thread id.
type threadCounts map[string]int64

// since sums what every thread alive at both readings added between them
// (a Go program seldom ends a thread; one ended is left out).
func (now threadCounts) since(then threadCounts) float64 {
	var d int64
	for tid, v := range now {
		if w, ok := then[tid]; ok {
			d += v - w
		}
	}
	return float64(d)
}

// threadStats is a process's CPU nanoseconds (schedstat's first field) and
// context switches (voluntary and not), thread by thread.
type threadStats struct{ cpuNS, switches threadCounts }

// threadTotals reads them from /proc/PID/task; a thread it cannot read is
// left out.
func threadTotals(pid int) threadStats {
	t := threadStats{cpuNS: threadCounts{}, switches: threadCounts{}}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return t
	}
	for _, task := range tasks {
		//nolint:gosec // G304: a /proc path of a child process
		if b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					t.cpuNS[task.Name()] = ns
				}
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "status")) //nolint:gosec // G304: a /proc path of a child process
		if err != nil {
			continue
		}
		var n int64
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				if c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n += c
				}
			}
		}
		t.switches[task.Name()] = n
	}
	return t
}

// pod is one running `flightfeed pump --feed` process.
type pod struct {
	cmd    *exec.Cmd
	log    string
	probes string
	exited chan error
}

func startPod(ctx context.Context, bin, kubeconfig string, key types.NamespacedName, identity string) (*pod, error) {
	probes, err := freeAddr(ctx)
	if err != nil {
		return nil, err
	}
	p := &pod{probes: probes, exited: make(chan error, 1)}
	logf, err := os.CreateTemp("", "bench-operator-"+identity+"-*.log")
	if err != nil {
		return nil, err
	}
	p.log = logf.Name()
	//nolint:gosec // G204: the binary under measurement, named by -bin or -baseline
	p.cmd = exec.CommandContext(context.WithoutCancel(ctx), bin, "pump", "--feed", key.String(), "--kubeconfig", kubeconfig,
		"--identity", identity, "--metrics-bind-address", "0", "--health-probe-bind-address", probes, "--api-bind-address", "0")
	if prof := os.Getenv("BENCH_IDLE_PROFILE_DIR"); prof != "" {
		p.cmd.Args = append(p.cmd.Args, "--cpuprofile", filepath.Join(prof, identity+".pprof"))
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait(); _ = logf.Close() }()
	return p, nil
}

// stop ends the pod as Kubernetes does (SIGTERM), waits for it and
// returns how it exited.
func (p *pod) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		err = <-p.exited
	}
	_ = os.Remove(p.log)
	return err
}

func (p *pod) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// probe plays kubelet: /readyz every 5 s, /healthz every 10 s (the pump
// Deployment's probes), until ctx ends.
func (p *pod) probe(ctx context.Context) {
	cl := &http.Client{Timeout: time.Second}
	get := func(path string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.probes+path, nil)
		if err != nil {
			return
		}
		if resp, err := cl.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for n := 0; ; n++ {
		get("/readyz")
		if n%2 == 0 {
			get("/healthz")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitLeader waits until identity leads the feed and its pump runs
// (Ready=True with it as the holder).
func waitLeader(ctx context.Context, c client.Client, key types.NamespacedName, identity string, p *pod) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			return fmt.Errorf("%s exited: %w\n%s", identity, err, p.tail())
		case <-time.After(500 * time.Millisecond):
		}
		var ff v1alpha1.FlightFeed
		if err := c.Get(ctx, key, &ff); err != nil {
			return err
		}
		if ff.Status.Pump != nil && ff.Status.Pump.Holder == identity && meta.IsStatusConditionTrue(ff.Status.Conditions, string(v1alpha1.ConditionReady)) {
			return nil
		}
	}
	return fmt.Errorf("%s did not lead %s with Ready=True within 2m\n%s", identity, key, p.tail())
}

// cpuTicks is utime+stime of pid (every thread), in USER_HZ ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which ends with the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc stat")
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	// f[0] is the state (field 3): utime and stime are fields 14 and 15.
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return u + s, nil
}

func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
