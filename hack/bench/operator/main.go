// Command operator measures what the control plane costs as feeds are
// added: the built `flightfeed manager` runs against an envtest
// control plane; FlightFeeds are created in steps (1, 10, 25, 50 by
// default) and, once the operator has made every feed's Deployment, its
// resident memory is read from /proc. Each line gives the ratio to the
// one-feed figure measured in the same run. It then starts -pumps pump
// pods of one feed (`flightfeed pump --feed`, standbys: no database is
// reachable, so none leads) and reads theirs: a pump pod's floor, with
// what VmRSS is made of (the process's own pages, the binary's shared
// pages), PSS and the pages touched while idle (see memFigures).
//
// Then (idle.go) the CPU of an idle feed's pump pods: a LEADER (its
// PostgreSQL, MariaDB mailbox and a kfake broker reachable) and a STANDBY
// of the same feed, in millicores over -idle after -settle, read from
// /proc/PID/stat (whole 10 ms ticks) and from the threads' schedstat
// (nanoseconds), and the wake-ups a second (the threads' context
// switches); with -baseline BIN the same for a baseline binary in
// alternation (-rounds), with the ratios. BENCH_IDLE_PROFILE_DIR=DIR
// writes a CPU profile of every pod (pump --cpuprofile).
//
//	KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh) go run ./hack/bench/operator -bin bin/flightfeed [-baseline BIN -rounds 2]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/serving"
	"github.com/flightfeed/flightfeed/internal/testsupport/kubetest"
)

func main() {
	bin := flag.String("bin", "bin/flightfeed", "the built flightfeed binary")
	steps := flag.String("feeds", "1,10,25,50", "feed counts to measure at, ascending")
	pumps := flag.Int("pumps", 3, "standby pump pods of one feed started together (their binary's pages are shared)")
	window := flag.Duration("touch-window", 20*time.Second, "how long the standby pump pods' touched pages (their idle working set) are watched")
	idle := idleOptions{}
	flag.DurationVar(&idle.window, "idle", 60*time.Second, "window of the idle pump pods' CPU measurement (0 skips it)")
	flag.DurationVar(&idle.settle, "settle", 15*time.Second, "how long the idle pump pods run before the window")
	flag.IntVar(&idle.rounds, "rounds", 1, "rounds of the idle measurement (with -baseline each measures both binaries, the order alternating)")
	flag.StringVar(&idle.baseline, "baseline", "", "a baseline flightfeed binary (hack/bench/baseline.sh) whose idle pump pods are measured in the same run, in alternation")
	flag.Parse()
	idle.bin = *bin
	if err := run(*bin, *steps, *pumps, *window, idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench/operator:", err)
		os.Exit(1)
	}
}

func run(bin, steps string, pumps int, window time.Duration, idle idleOptions) error {
	var counts []int
	for _, s := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-feeds %q: want ascending positive counts", steps)
		}
		counts = append(counts, n)
	}
	cfg, stop, err := kubetest.StartMain()
	if err != nil {
		return err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "bench-operator")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kubetest.WriteKubeconfig(cfg, kubeconfig); err != nil {
		return err
	}
	scheme, err := serving.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+time.Duration(2*idle.rounds)*(idle.settle+idle.window+time.Minute))
	defer cancel()
	const ns = "bench"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	//nolint:gosec // G204: the binary under measurement, named by -bin
	op := exec.CommandContext(ctx, bin, "manager", "--kubeconfig", kubeconfig, "--pump-image", "flightfeed:bench",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--namespace", ns)
	op.Env = append(os.Environ(), "GOMEMLIMIT=")
	if err := op.Start(); err != nil {
		return err
	}
	defer func() { _ = op.Process.Kill(); _ = op.Wait() }()

	fmt.Printf("# flightfeed manager against envtest, %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-8s %-12s %-12s %s\n", "feeds", "RSS MiB", "peak MiB", "ratio to 1 feed")
	made, base := 0, 0.0
	for _, n := range counts {
		for ; made < n; made++ {
			if err := c.Create(ctx, feed(ns, fmt.Sprintf("f%03d", made))); err != nil {
				return err
			}
		}
		if err := waitDeployments(ctx, c, ns, n); err != nil {
			return err
		}
		time.Sleep(3 * time.Second) // let the reconciles and caches settle
		m, err := readMemory(op.Process.Pid)
		if err != nil {
			return err
		}
		if base == 0 {
			base = m.RSS
		}
		fmt.Printf("%-8d %-12.1f %-12.1f %.2f\n", n, m.RSS, m.HWM, m.RSS/base)
	}

	if err := standbyFloor(ctx, bin, kubeconfig, ns+"/f000", pumps, window); err != nil {
		return err
	}
	if idle.window <= 0 {
		return nil
	}
	if idle.rounds < 1 {
		return fmt.Errorf("-rounds %d: at least 1", idle.rounds)
	}
	return measureIdle(ctx, c, kubeconfig, ns, idle)
}

// standbyFloor starts pumps pump pods of feed (`flightfeed pump --feed`;
// no database is reachable, so none leads: standbys) and prints each
// one's memory: VmRSS and what it is made of, PSS (the binary's pages
// shared among them) and what each touched in window once settled.
func standbyFloor(ctx context.Context, bin, kubeconfig, feed string, pumps int, window time.Duration) error {
	pids := make([]int, 0, pumps)
	for i := range pumps {
		//nolint:gosec // G204: the binary under measurement, named by -bin
		pod := exec.CommandContext(ctx, bin, "pump", "--feed", feed, "--kubeconfig", kubeconfig,
			"--identity", fmt.Sprintf("pump-bench-%d", i),
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--api-bind-address", "0")
		if err := pod.Start(); err != nil {
			return err
		}
		defer func() { _ = pod.Process.Kill(); _ = pod.Wait() }()
		pids = append(pids, pod.Process.Pid)
	}
	time.Sleep(8 * time.Second)
	for _, pid := range pids {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("1"), 0o600); err != nil {
			return fmt.Errorf("clear the referenced bits of pump pod %d: %w", pid, err)
		}
	}
	time.Sleep(window)
	fmt.Printf("%d standby pump pods of one feed, no database reachable (PSS shares the binary's pages among them; touched: in %s idle):\n", pumps, window)
	for i, pid := range pids {
		m, err := readMemory(pid)
		if err != nil {
			return err
		}
		fmt.Printf("  pump pod %d: %s\n", i, m)
	}
	return nil
}

func feed(ns, name string) *v1alpha1.FlightFeed {
	return &v1alpha1.FlightFeed{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.FlightFeedSpec{
		Airport:  v1alpha1.AirportSpec{IATA: "PEK", TimeZone: "Asia/Shanghai"},
		Mailbox:  v1alpha1.MailboxSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-mailbox", Key: "dsn"}},
		Database: v1alpha1.DatabaseSpec{DSNSecretRef: v1alpha1.SecretKeyRef{Name: name + "-db", Key: "dsn"}},
		Kafka:    v1alpha1.KafkaSpec{Brokers: []string{"127.0.0.1:9"}},
	}}
}

func waitDeployments(ctx context.Context, c client.Client, ns string, n int) error {
	for {
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Deployments made: %w", len(list.Items), n, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
