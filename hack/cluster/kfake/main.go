// Command kfake runs franz-go's kfake Kafka-protocol broker on one address of
// the local cluster's bridge (hack/cluster), so that the pods and the host
// both reach it: a broker advertises the address it listens on, so a broker
// on loopback would send the pods to their own loopback.
//
//	go run ./hack/cluster/kfake -addr 10.222.0.1 -port 19092
//
// It prints "kfake listening on host:port" once ready and runs until SIGINT
// or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	addr := flag.String("addr", "10.222.0.1", "address to listen on")
	port := flag.Int("port", 19092, "TCP port")
	topics := flag.String("topics", "KAFKA_SCHD,KAFKA_MSG", "comma-separated topics to create")
	partitions := flag.Int("partitions", 3, "partitions per created topic")
	flag.Parse()

	listen := func(network, _ string) (net.Listener, error) {
		var lc net.ListenConfig
		return lc.Listen(context.Background(), network, net.JoinHostPort(*addr, strconv.Itoa(*port)))
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.ListenFn(listen)}
	if *topics != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...)) //nolint:gosec // small flag value
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer cluster.Close()
	fmt.Println("kfake listening on", strings.Join(cluster.ListenAddrs(), ","))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
