// Package e2e holds the end-to-end test of FlightFeed as users install and
// upgrade it: `helm install` of the previous release (its chart from git,
// its image built from its commit by hack/cluster/previous-image.sh), then
// `helm upgrade` to charts/flightfeed with the locally built image (`make
// image`) on the real single-node cluster of hack/cluster: real operator
// and pump pods, PostgreSQL and MariaDB on the machine, kfake brokers on the
// cluster's bridge. The test needs that cluster, so it is behind the
// `cluster` build tag; hack/test.sh builds both images, brings the cluster
// up, runs it and tears it down:
//
//	make image && bash hack/cluster/previous-image.sh && bash hack/cluster/up.sh
//	go test -tags cluster -count=1 -v ./hack/cluster/e2e/
//
// (previous-image.sh builds for several minutes the first time; run it
// before the test, whose commands are bounded.) The package holds tests
// only.
package e2e
