#!/usr/bin/env bash
# What the Go tests need around them: the local services (PostgreSQL,
# MariaDB, kcat), the envtest control plane's binaries (KUBEBUILDER_ASSETS)
# the shared kfake Kafka test broker (FLIGHTFEED_TEST_KAFKA) and an address
# envtest's API server can proxy to (FLIGHTFEED_TEST_POD_IP).
#
#   bash hack/test-env.sh CMD...   provide all four, run CMD, stop the
#                                  broker (make test-short runs the tests so)
#   source hack/test-env.sh        define the steps for a script that runs
#                                  them itself (hack/test.sh)

# test_env_services: PostgreSQL, MariaDB and kcat installed and running.
test_env_services() {
  bash hack/services.sh
}

# test_env_envtest: exports KUBEBUILDER_ASSETS (built the first time).
test_env_envtest() {
  KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh)
  export KUBEBUILDER_ASSETS
}

# test_env_kafka DIR: builds hack/kfake-broker into DIR and starts it on a
# free port (its log in DIR/broker.log); sets broker_pid and exports
# FLIGHTFEED_TEST_KAFKA. test_env_kafka_stop stops it. Another run may
# take a port between the probe and the bind (runs beside each other share
# this range): a broker that cannot bind moves on to the next port.
test_env_kafka() {
  local dir=$1 port= p
  go build -o "$dir/kfake-broker" ./hack/kfake-broker
  for p in $(seq 19092 19192); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then continue; fi
    "$dir/kfake-broker" -port "$p" >"$dir/broker.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 100); do
      grep -q "kfake listening" "$dir/broker.log" 2>/dev/null && break
      kill -0 "$broker_pid" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q "kfake listening" "$dir/broker.log"; then port=$p; break; fi
    if ! grep -q "address already in use" "$dir/broker.log"; then
      echo "Kafka test broker did not start" >&2; cat "$dir/broker.log" >&2; exit 1
    fi
    wait "$broker_pid" 2>/dev/null || true
  done
  [ -n "$port" ] || { echo "no free port for the Kafka test broker" >&2; exit 1; }
  export FLIGHTFEED_TEST_KAFKA="127.0.0.1:$port"
  echo "Kafka test broker on $FLIGHTFEED_TEST_KAFKA" >&2
}

# test_env_pod_address: exports FLIGHTFEED_TEST_POD_IP, an address on an
# interface of our own that a test's read API listens on so that envtest's
# API server can reach it through its service proxy as it would a pod:
# the API server refuses loopback endpoints (they would let a user reach
# the API server's own host), and the workplace's rule is to add no address
# to an existing interface. A bridge with no ports (no packet leaves it),
# made when missing and shared by the runs beside each other (a helper's
# package tests beside the full suite): each run registers itself, and
# test_env_pod_address_stop removes the bridge when no registered run is
# still alive, whichever run made it.
test_pod_bridge=ffpodaddr0
test_pod_users=${TMPDIR:-/tmp}/flightfeed-pod-address-users
test_env_pod_address() {
  local ip=10.254.254.1
  mkdir -p "$test_pod_users"
  : >"$test_pod_users/$$"
  if ! ip link show "$test_pod_bridge" >/dev/null 2>&1; then
    ip link add "$test_pod_bridge" type bridge 2>/dev/null || ip link show "$test_pod_bridge" >/dev/null
    ip addr replace "$ip/32" dev "$test_pod_bridge"
    ip link set "$test_pod_bridge" up
  fi
  export FLIGHTFEED_TEST_POD_IP=$ip
}

test_env_pod_address_stop() {
  local f
  [ -e "$test_pod_users/$$" ] || return 0
  rm -f "$test_pod_users/$$"
  for f in "$test_pod_users"/*; do
    [ -e "$f" ] || continue
    if kill -0 "${f##*/}" 2>/dev/null; then return 0; fi
    rm -f "$f"
  done
  ip link delete "$test_pod_bridge" 2>/dev/null || true
}

test_env_kafka_stop() {
  if [ -n "${broker_pid:-}" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  [ $# -gt 0 ] || { echo "usage: bash hack/test-env.sh CMD..." >&2; exit 2; }
  work=$(mktemp -d)
  broker_pid=
  trap 'test_env_kafka_stop; test_env_pod_address_stop; rm -rf "$work"' EXIT
  test_env_services
  test_env_envtest
  test_env_kafka "$work"
  test_env_pod_address
  "$@"
fi
