#!/usr/bin/env bash
# The whole test suite, from a fresh machine: local services, the envtest
# control plane, a kfake Kafka broker, generated-file check, vet, lint and
# every Go test. `make test` runs this; so does CI (.ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The full run runs every test on every backend: a variable that narrows
# it (the pump's tests on the in-memory backend only) would skip the
# PostgreSQL half and still pass.
if [ -n "${FLIGHTFEED_PUMP_BACKENDS:-}" ]; then
  echo "hack/test.sh: FLIGHTFEED_PUMP_BACKENDS=$FLIGHTFEED_PUMP_BACKENDS would skip the PostgreSQL-backed pump tests; unset it for the full run" >&2
  exit 2
fi

cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
mkdir -p "$cache"
start=$(date +%s)
steps=()
step() {
  echo "== $* ($(( $(date +%s) - start ))s)" >&2
  steps+=("$(date +%s) $*")
}
# Where the time went: each step's duration, printed when the run ends.
timings() {
  local i t name next
  echo "== where the time went" >&2
  for ((i = 0; i < ${#steps[@]}; i++)); do
    t=${steps[$i]%% *} name=${steps[$i]#* }
    [ "$name" = done ] && continue
    next=$(date +%s)
    [ $((i + 1)) -lt ${#steps[@]} ] && next=${steps[$((i + 1))]%% *}
    printf '   %5ds  %s\n' $((next - t)) "$name" >&2
  done
  printf '   %5ds  total\n' $(( $(date +%s) - start )) >&2
}

# shellcheck source=hack/test-env.sh
source hack/test-env.sh

step "services"
test_env_services

step "envtest control plane"
test_env_envtest

step "Kafka test broker"
work=$(mktemp -d)
broker_pid=
cleanup() {
  test_env_kafka_stop
  test_env_pod_address_stop
  rm -rf "$work"
}
trap cleanup EXIT
test_env_kafka "$work"
test_env_pod_address

# The real-cluster step at the end needs the cluster's binaries (the first
# run compiles ~10 minutes of CPU), the operator's image and the previous
# release's (the upgrade starts from it; built once from its commit and
# cached): build them now at the lowest priority, in the CPU time the steps
# below leave idle.
prep_log="$work/cluster-prep.log"
setsid nice -n 19 bash -c 'bash hack/cluster/build.sh >/dev/null && make --no-print-directory image && bash hack/cluster/previous-image.sh >/dev/null' >"$prep_log" 2>&1 &
prep_pid=$!
trap 'rc=$?; kill -- -$prep_pid 2>/dev/null || true; cleanup; timings; exit $rc' EXIT

step "generated files"
make --no-print-directory verify-generated

step "Helm chart and kustomize"
bash hack/helm-check.sh

step "vet"
go vet ./...

step "lint"
make --no-print-directory lint

step "tests"
# Every skip must be on hack/test-skips.txt (hack/testreport fails the run
# otherwise): a skipped test checks nothing.
go build -o "$work/testreport" ./hack/testreport
go test -race -count=1 -timeout 20m -json ./... | "$work/testreport" -allow hack/test-skips.txt

# The reliability suite (docs/reliability.md) in its bounded form: the binary built
# with `-tags reliability` crashed once at every fail point, and the other
# scenarios under internal/reliability (make reliability runs them in full).
step "reliability (bounded)"
go vet -tags reliability ./...
FLIGHTFEED_RELIABILITY_SUMMARY="$work/reliability-summary.txt" \
  go test -tags reliability -count=1 -timeout 15m ./internal/failpoint/ ./internal/reliability/...
cat "$work/reliability-summary.txt" >&2

step "real cluster: build (first run only), image, up"
# The end-to-end test of the chart on a real single-node Kubernetes cluster
# (hack/cluster/): helm install with the local image, takeover, upgrade,
# uninstall. The cluster is torn down whatever happens, and down.sh fails
# the run if anything (process, mount, namespace, iptables chain) is left.
cluster_down() {
  bash hack/cluster/down.sh || { echo "hack/cluster/down.sh left something behind" >&2; return 1; }
}
trap 'rc=$?; kill -- -$prep_pid 2>/dev/null || true; cluster_down || rc=1; cleanup; timings; exit $rc' EXIT
wait "$prep_pid" || { cat "$prep_log" >&2; echo "building the cluster or the image failed" >&2; exit 1; }
cat "$prep_log" >&2
bash hack/cluster/down.sh >/dev/null 2>&1 || true
bash hack/cluster/up.sh >/dev/null
bash hack/cluster/load-image.sh bin/flightfeed-image.tar
FLIGHTFEED_CLUSTER_HELM=$(bash hack/cluster/helm.sh)
FLIGHTFEED_CLUSTER_KUBECONFIG=$(bash hack/cluster/env.sh)
export FLIGHTFEED_CLUSTER_HELM FLIGHTFEED_CLUSTER_KUBECONFIG

step "real cluster: upgrade from the previous release, pump pods, takeover, uninstall"
go test -tags cluster -count=1 -timeout 15m -v ./hack/cluster/e2e/

step "real cluster: down"
trap 'rc=$?; cleanup; timings; exit $rc' EXIT
cluster_down

step "done"
