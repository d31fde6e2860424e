#!/usr/bin/env bash
# What the Go tests need around them: the local services (PostgreSQL,
# MariaDB, kcat), the envtest control plane's binaries (KUBEBUILDER_ASSETS)
# and the shared kfake Kafka test broker (FLIGHTFEED_TEST_KAFKA).
#
#   bash hack/test-env.sh CMD...   provide all three, run CMD, stop the
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
# FLIGHTFEED_TEST_KAFKA. test_env_kafka_stop stops it.
test_env_kafka() {
  local dir=$1 port= p
  go build -o "$dir/kfake-broker" ./hack/kfake-broker
  for p in $(seq 19092 19192); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
  [ -n "$port" ] || { echo "no free port for the Kafka test broker" >&2; exit 1; }
  "$dir/kfake-broker" -port "$port" >"$dir/broker.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 100); do
    grep -q "kfake listening" "$dir/broker.log" 2>/dev/null && break
    kill -0 "$broker_pid" 2>/dev/null || { cat "$dir/broker.log" >&2; exit 1; }
    sleep 0.1
  done
  grep -q "kfake listening" "$dir/broker.log" || { echo "Kafka test broker did not start" >&2; cat "$dir/broker.log" >&2; exit 1; }
  export FLIGHTFEED_TEST_KAFKA="127.0.0.1:$port"
  echo "Kafka test broker on $FLIGHTFEED_TEST_KAFKA" >&2
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
  trap 'test_env_kafka_stop; rm -rf "$work"' EXIT
  test_env_services
  test_env_envtest
  test_env_kafka "$work"
  "$@"
fi
