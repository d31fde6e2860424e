// Command kfake-broker runs franz-go's kfake, an in-memory Kafka-protocol
// broker, on loopback TCP ports for tests and the demo. No Kafka package
// exists on this machine's registries; production points at real brokers.
//
//	go run ./hack/kfake-broker -port 9092 -topics KAFKA_SCHD,KAFKA_MSG
//
// It prints "kfake listening on host:port[,host:port]" once ready and runs
// until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
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
	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.Ports(ports...)}
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
