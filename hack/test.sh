#!/usr/bin/env bash
# The whole test suite, from a fresh machine: local services, the envtest
# control plane, a kfake Kafka broker, generated-file check, vet, lint and
# every Go test. `make test` runs this; so does CI (.ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
mkdir -p "$cache"
start=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - start ))s)" >&2; }

step "services"
bash hack/services.sh

step "envtest control plane"
KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh)
export KUBEBUILDER_ASSETS

step "Kafka test broker"
work=$(mktemp -d)
broker_pid=
cleanup() {
  if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/kfake-broker" ./hack/kfake-broker
port=
for p in $(seq 19092 19192); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port for the Kafka test broker" >&2; exit 1; }
"$work/kfake-broker" -port "$port" >"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1 100); do
  grep -q "kfake listening" "$work/broker.log" 2>/dev/null && break
  kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log" >&2; exit 1; }
  sleep 0.1
done
grep -q "kfake listening" "$work/broker.log" || { echo "Kafka test broker did not start" >&2; cat "$work/broker.log" >&2; exit 1; }
export FLIGHTFEED_TEST_KAFKA="127.0.0.1:$port"
echo "Kafka test broker on $FLIGHTFEED_TEST_KAFKA" >&2

step "generated files"
make --no-print-directory verify-generated

step "Helm chart and kustomize"
bash hack/helm-check.sh

step "vet"
go vet ./...

step "lint"
make --no-print-directory lint

step "tests"
go test -race -count=1 -timeout 20m ./...

step "done"
