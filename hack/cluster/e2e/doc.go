// Package e2e holds the end-to-end test of FlightFeed as users install it:
// `helm install` of charts/flightfeed with the locally built image (`make
// image`) on the real single-node cluster of hack/cluster, real pods,
// PostgreSQL and MariaDB on the machine, a kfake broker on the cluster's
// bridge. The test needs that cluster, so it is behind the `cluster` build
// tag; hack/test.sh brings the cluster up, runs it and tears it down:
//
//	make image && bash hack/cluster/up.sh
//	go test -tags cluster -count=1 -v ./hack/cluster/e2e/
//
// The package holds tests only.
package e2e
