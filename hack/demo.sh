#!/usr/bin/env bash
# `make demo`: FlightFeed as its users meet it, on a real single-node
# Kubernetes cluster built on this machine (hack/cluster/): `helm install` of
# the chart with the locally built image (the operator, 2 replicas), the
# sample FlightFeed and its Secrets, which the operator turns into the pump
# pods pek-pump-* (2, one leading), `flightfeed simulate` playing the AODB,
# what a user looks at with kubectl, then the leader pump pod deleted and the
# standby taking over. The cluster stays up for a look around; `make demo-down` (this script
# with "down") tears it all down. `make demo-cli` is the quick path without
# Kubernetes.
#
# The pods reach the machine's PostgreSQL and MariaDB at 10.222.0.1 (the
# cluster's bridge, relayed to 127.0.0.1) and a kfake broker listening there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/cluster/lib.sh
source hack/cluster/lib.sh

if [ "${1:-}" = down ]; then
  exec bash hack/cluster/down.sh
fi

ff=bin/flightfeed
work=$cache/demo-cluster
mkdir -p "$work"
ns=flightfeed-system
broker_port=19092
t0=$(date +%s)
n=0
say() { n=$((n + 1)); printf '\n\033[1m== %d/10 %s\033[0m (%ss)\n' "$n" "$*" "$(( $(date +%s) - t0 ))"; }
show() { # prints the command as one would type it, then runs it
  local line="" a
  for a; do
    case $a in *[[:space:]\'\|\&\;\(\)\<\>\*]*) line+=" \"$a\"" ;; *) line+=" $a" ;; esac
  done
  printf '\n$%s\n' "$line"
  "$@"
}
poll() { # what, seconds, command...
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "demo: $what did not happen within ${secs}s" >&2; return 1
}
mbx() { mariadb -h 127.0.0.1 -u root flightfeed_demo_mbx "$@"; }

say "local services: PostgreSQL, MariaDB, kcat"
bash hack/services.sh

say "the cluster: Kubernetes v1.37.2 (the first run builds it from Go modules, about 12 minutes on 2 idle cores; later runs start it in about 15 s)"
bash hack/cluster/up.sh >/dev/null
show kubectl get nodes -o wide
PATH="$(dirname "$(bash hack/cluster/helm.sh)"):$PATH"

say "the operator's image (make image: an OCI archive, no Docker engine) into the cluster's containerd"
ref=$(cat bin/flightfeed-image.ref)
bash hack/cluster/load-image.sh bin/flightfeed-image.tar

say "fresh demo databases; a kfake Kafka broker on $node_ip:$broker_port"
kubectl delete flightfeeds.flightfeed.aero pek --ignore-not-found --wait=true >/dev/null 2>&1 || true
mariadb -h 127.0.0.1 -u root -e 'DROP DATABASE IF EXISTS flightfeed_demo_mbx; CREATE DATABASE flightfeed_demo_mbx CHARACTER SET utf8mb4'
psql -q -h 127.0.0.1 -U postgres -d postgres -c 'DROP DATABASE IF EXISTS flightfeed_demo WITH (FORCE)' -c 'CREATE DATABASE flightfeed_demo'
# The host's view of the feed, for `flightfeed simulate`, `ledger` and `export`.
cat >"$work/host.yaml" <<YAML
airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/flightfeed_demo_mbx", pollInterval: 100ms, batchSize: 1000}
database: {dsn: "postgres://postgres@127.0.0.1:5432/flightfeed_demo?sslmode=disable"}
kafka: {brokers: ["$node_ip:$broker_port"], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}
YAML
$ff simulate --config "$work/host.yaml" --create-mailbox --answer-requests=false --traffic=false >/dev/null
go build -o "$work/kfake" ./hack/kfake-broker
if alive demo-kfake; then read -r pid _ <"$pids/demo-kfake.pid"; kill "$pid"; sleep 0.5; fi
setsid "$work/kfake" -addr "$node_ip" -port "$broker_port" >"$logs/demo-kfake.log" 2>&1 </dev/null &
echo "$! $work/kfake" >"$pids/demo-kfake.pid"
poll "the kfake broker" 10 grep -q "kfake listening" "$logs/demo-kfake.log"
cat "$logs/demo-kfake.log"

say "helm install the chart with the local image ($ref): the operator, 2 replicas (one leads)"
show helm upgrade --install flightfeed charts/flightfeed --namespace "$ns" --create-namespace \
  --set image.repository=flightfeed --set image.tag="${ref##*:}" --wait --timeout 5m
show kubectl -n "$ns" get deployments,pods -o wide

say "the sample FlightFeed and its Secrets (config/samples; DSNs and broker pointed at this machine)"
sed -e "s|flightfeed:change-me@tcp(sis-mailbox.aodb.svc.cluster.local:3306)/sis?tls=true|root@tcp($node_ip:3306)/flightfeed_demo_mbx|" \
    -e "s|postgres://flightfeed:change-me@flightfeed-db-rw.databases.svc.cluster.local:5432/flightfeed?sslmode=verify-full|postgres://postgres@$node_ip:5432/flightfeed_demo?sslmode=disable|" \
    -e "s|\"events-kafka-bootstrap.kafka.svc.cluster.local:9092\"|\"$node_ip:$broker_port\"|" \
    -e "s|mailbox: {dsnSecretRef: {name: pek-mailbox, key: dsn}}|mailbox: {dsnSecretRef: {name: pek-mailbox, key: dsn}, pollInterval: 100ms, batchSize: 1000, tls: {mode: disable}}|" \
    -e "s|database: {dsnSecretRef: {name: pek-db, key: dsn}}|database: {dsnSecretRef: {name: pek-db, key: dsn}, tls: {mode: disable}}|" \
    -e '$a\  requests: {horizon: {from: 0, to: 1}, interval: 1h, timeout: 5m, routingId: AODB}' \
    config/samples/flightfeed_v1alpha1_flightfeed.yaml >"$work/pek.yaml"
# The sample is minimal; the demo polls fast and requests today and
# tomorrow only, as before. Its placeholders changed once unnoticed: check.
# Both Secrets must name the feed (flightfeed.aero/feeds), or it never starts.
! grep -qE 'change-me|svc.cluster.local' "$work/pek.yaml" && grep -q 'pollInterval: 100ms' "$work/pek.yaml" && [ "$(grep -c 'mode: disable' "$work/pek.yaml")" = 2 ] || { echo "demo: config/samples' minimal FlightFeed no longer holds the DSNs and broker this script replaces" >&2; exit 1; }
[ "$(grep -c 'annotations: {flightfeed.aero/feeds: pek}' "$work/pek.yaml")" = 2 ] || { echo "demo: config/samples' Secrets no longer name the feed pek in flightfeed.aero/feeds" >&2; exit 1; }
show kubectl apply -f "$work/pek.yaml"
poll "the pump pods pek-pump-*" 120 sh -c "[ \"\$(kubectl -n default get deployment pek-pump -o jsonpath='{.status.readyReplicas}')\" = 2 ]"
echo "the operator made the Deployment pek-pump (its ServiceAccount, Role, Service, PodDisruptionBudget) in the feed's namespace:"
show kubectl get pods -A -l app.kubernetes.io/name=flightfeed -o wide
rqfds() { [ "$(mbx -N -e "SELECT COUNT(*) FROM COUTMSGS WHERE COUTMSGS_CLOB_MSG LIKE '%<TYPE>RQFD</TYPE>%'")" -ge "$1" ]; }
poll "the pump's full-day request (RQFD) in COUTMSGS" 120 rqfds 1
echo "the pump asked the AODB for today's schedule (an RQFD row in COUTMSGS); tomorrow's follows once today's is answered"

say "the AODB (flightfeed simulate): today's traffic with 3 malformed messages, the answers to the full-day requests"
$ff simulate --config "$work/host.yaml" --flights 30 --malformed 3 >"$work/simulate.out"
tail -n 3 "$work/simulate.out"
poll "the pump's request for tomorrow" 120 rqfds 2
$ff simulate --config "$work/host.yaml" --flights 20 --traffic=false >>"$work/simulate.out"
echo "the AODB answered the request for tomorrow with a RESP of 20 flights"
drained() { [ "$(mbx -N -e 'SELECT COUNT(*) FROM CMINMSGS WHERE CMINMSGS_DATE_PROCESSED IS NULL')" = 0 ]; }
poll "the mailbox drained" 120 drained
show kubectl wait --for=condition=Ready flightfeeds.flightfeed.aero/pek --timeout=120s

say "what a user looks at"
sleep 3 # the status and FlightFeedDays follow the pump's commits within a report interval
show kubectl get flightfeeds
show kubectl get flightfeeds -o wide
show kubectl get flightfeeddays
# (of this run's FlightFeed: Events of an earlier one of the same name linger for an hour)
uid=$(kubectl get flightfeeds.flightfeed.aero pek -o jsonpath='{.metadata.uid}')
show kubectl get events --field-selector "reason=DeadMessage,involvedObject.uid=$uid"
show mariadb -h 127.0.0.1 -u root flightfeed_demo_mbx -e "SELECT CMINMSGS_ID AS id, CMINMSGS_PROC_RESULT AS result, LEFT(CMINMSGS_PROC_NOTE, 90) AS note FROM CMINMSGS WHERE CMINMSGS_PROC_RESULT <> 'SUCCEEDED'"
# The read API is served by the pump pods, behind the feed's Service pek-pump.
svc=$(kubectl -n default get service pek-pump -o jsonpath='{.spec.clusterIP}')
$ff export --config "$work/host.yaml" >"$work/export.jsonl"
flid=$(head -n 1 "$work/export.jsonl" | sed -n 's/.*"FLID":"\([0-9A-Za-z_-]*\)".*/\1/p')
[ -n "$flid" ] || { echo "demo: no flight in the export" >&2; exit 1; }
# The read API wants a bearer token allowed to get flightfeeds/flights (and
# flightfeeds/messages for dead) in the
# feed's namespace: a ServiceAccount with such a Role, and a token for it.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: flight-reader, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: flight-reader, namespace: default}
rules: [{apiGroups: [flightfeed.aero], resources: [flightfeeds/flights, flightfeeds/messages], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flight-reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flight-reader}
subjects: [{kind: ServiceAccount, name: flight-reader, namespace: default}]
YAML
show curl -sSk -o /dev/null -w '%{http_code} without a token\n' "https://$svc:8082/api/v1/feeds/default/pek/flights/$flid"
# A token for this feed only: its audience names the feed (a token for the
# API server, or for another feed, is refused with 401).
token=$(kubectl -n default create token flight-reader --audience flightfeed.aero/default/pek --duration 10m)
printf '\n$ token=$(kubectl -n default create token flight-reader --audience flightfeed.aero/default/pek)\n'
# -k: the pump pods' certificate is self-signed (docs/security.md); the
# plugin below goes through the API server instead, whose CA kubectl trusts.
printf '\n$ curl -sSk -H "Authorization: Bearer $token" https://%s:8082/api/v1/feeds/default/pek/flights/%s\n' "$svc" "$flid"
curl -sSk -H "Authorization: Bearer $token" "https://$svc:8082/api/v1/feeds/default/pek/flights/$flid"
echo
# The kubectl plugin, its own binary (make plugin, which make demo runs
# first): through the API server's service proxy, with a token it makes
# for the ServiceAccount.
[ -x bin/kubectl-flightfeed ] && [ ! -L bin/kubectl-flightfeed ] || make plugin
show bin/kubectl-flightfeed get flight pek "$flid" -n default --service-account flight-reader
show bin/kubectl-flightfeed dead pek -n default --service-account flight-reader
show "$ff" ledger --config "$work/host.yaml"
kcat -C -X isolation.level=read_committed -b "$node_ip:$broker_port" -t KAFKA_SCHD -o beginning -e -q -f '%k %h\n' >"$work/kafka_schd.txt"
kcat -C -X isolation.level=read_committed -b "$node_ip:$broker_port" -t KAFKA_MSG -o beginning -e -q >"$work/kafka_msg.txt"
printf '\n$ kcat -C -X isolation.level=read_committed -b %s -t KAFKA_SCHD -o beginning -e -q -f '\''%%k %%h\\n'\''   (and -t KAFKA_MSG)\n' "$node_ip:$broker_port"
echo "KAFKA_SCHD: $(wc -l <"$work/kafka_schd.txt") records (full state, coalesced per FLID); KAFKA_MSG: $(wc -l <"$work/kafka_msg.txt") change notices"
head -n 3 "$work/kafka_schd.txt"
head -n 2 "$work/kafka_msg.txt"

say "takeover: delete the leader pump pod; the standby takes the feed's Lease"
show kubectl get pods -A -l app.kubernetes.io/name=flightfeed
show kubectl -n default get lease flightfeed.default.pek
leader=$(kubectl -n default get lease flightfeed.default.pek -o jsonpath='{.spec.holderIdentity}')
deleted=$(date +%s.%N)
show kubectl -n default delete pod "$leader" --wait=false
took() { h=$(kubectl -n default get lease flightfeed.default.pek -o jsonpath='{.spec.holderIdentity}'); [ -n "$h" ] && [ "$h" != "$leader" ]; }
poll "a takeover" 60 took
awk -v a="$deleted" -v b="$(date +%s.%N)" 'BEGIN {printf "\nanother pump pod took the Lease %.1f s after the delete\n", b - a}'
show kubectl -n default get lease flightfeed.default.pek
# The new leader's status report follows its first commit; give it a moment.
poll "the new leader in the status" 30 sh -c "[ \"\$(kubectl get flightfeeds.flightfeed.aero pek -o jsonpath='{.status.pump.holder}')\" != '$leader' ]"
before=$(mbx -N -e 'SELECT COUNT(*) FROM CMINMSGS')
$ff simulate --config "$work/host.yaml" --flights 30 --seed 2 --answer-requests=false >/dev/null
poll "the mailbox drained by the new leader" 120 drained
echo
echo "the AODB sent $(( $(mbx -N -e 'SELECT COUNT(*) FROM CMINMSGS') - before )) more messages; the new leader processed them:"
sleep 3
show mariadb -h 127.0.0.1 -u root flightfeed_demo_mbx -e "SELECT CMINMSGS_PROC_RESULT AS result, COUNT(*) AS messages FROM CMINMSGS GROUP BY 1"
show kubectl get flightfeeds
show kubectl get pods -A -l app.kubernetes.io/name=flightfeed -o wide

say "done in $(( $(date +%s) - t0 ))s. The cluster stays up: export KUBECONFIG=$KUBECONFIG; 'make demo-down' tears it all down"
