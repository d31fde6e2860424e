// Command kfake-broker runs franz-go's kfake, an in-memory Kafka-protocol
// broker, on TCP ports for tests and the demos. No Kafka package exists on
// this machine's registries; production points at real brokers.
//
//	go run ./hack/kfake-broker -port 9092 -topics KAFKA_SCHD,KAFKA_MSG
//
// On loopback by default (hack/test-env.sh, hack/demo-cli.sh). -addr puts
// it on another local address, such as the local cluster's bridge
// (hack/demo.sh: -addr 10.222.0.1), so that the pods and the host both
// reach it: a broker advertises the address it listens on, so a broker on
// loopback would send the pods to their own loopback.
//
// It prints "kfake listening on host:port[,host:port]" once ready and runs
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfake-broker:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1", "local address to listen on (and advertise)")
	port := flag.Int("port", 9092, "first TCP port; brokers listen on port, port+1, ...")
	brokers := flag.Int("brokers", 1, "number of brokers")
	topics := flag.String("topics", "KAFKA_SCHD,KAFKA_MSG", "comma-separated topics to create")
	partitions := flag.Int("partitions", 3, "partitions per created topic")
	dataDir := flag.String("data-dir", "", "persist the log here so a restart keeps it (default: memory only)")
	flag.Parse()

	if *brokers < 1 || *brokers > 9 {
		return fmt.Errorf("-brokers %d: must be 1 to 9", *brokers)
	}
	ports := make([]int, *brokers)
	for i := range ports {
		ports[i] = *port + i
	}
	// kfake picks each broker's loopback address from Ports; ListenFn
	// moves it to -addr, keeping the port.
	listen := func(network, address string) (net.Listener, error) {
		_, p, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		var lc net.ListenConfig
		return lc.Listen(context.Background(), network, net.JoinHostPort(*addr, p))
	}
	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.Ports(ports...), kfake.ListenFn(listen)}
	if names := splitTopics(*topics); len(names) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), names...)) //nolint:gosec // small flag value
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()
	fmt.Println("kfake listening on", strings.Join(cluster.ListenAddrs(), ","))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

func splitTopics(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
