#!/usr/bin/env bash
# `make demo-cli`: one feed end to end on this machine's own services — a
# MariaDB mailbox, a PostgreSQL state database and a kfake Kafka broker —
# with `flightfeed simulate` playing the AODB. Every run starts from fresh
# demo databases (flightfeed_demo, flightfeed_demo_mbx).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work=${FLIGHTFEED_DEMO_DIR:-${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}/demo}
mkdir -p "$work"
ff=bin/flightfeed
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "local services"
bash hack/services.sh

say "fresh demo databases"
mariadb -h 127.0.0.1 -u root -e 'DROP DATABASE IF EXISTS flightfeed_demo_mbx; CREATE DATABASE flightfeed_demo_mbx CHARACTER SET utf8mb4'
psql -q -h 127.0.0.1 -U postgres -d postgres -c 'DROP DATABASE IF EXISTS flightfeed_demo WITH (FORCE)' -c 'CREATE DATABASE flightfeed_demo'

say "Kafka (kfake) broker"
go build -o "$work/kfake-broker" ./hack/kfake-broker
port=
for p in $(seq 19092 19192); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "no free port for the broker" >&2; exit 1; }
"$work/kfake-broker" -port "$port" >"$work/broker.log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "kfake listening" "$work/broker.log" && break; sleep 0.1; done
cat "$work/broker.log"

cat >"$work/demo.yaml" <<YAML
airport: {iata: PEK, timeZone: Asia/Shanghai}
mailbox: {dsn: "root@tcp(127.0.0.1:3306)/flightfeed_demo_mbx", pollInterval: 100ms, batchSize: 1000}
database: {dsn: "postgres://postgres@127.0.0.1:5432/flightfeed_demo?sslmode=disable"}
kafka: {brokers: ["127.0.0.1:$port"], topics: {state: KAFKA_SCHD, notice: KAFKA_MSG}}
requests: {horizon: {from: 0, to: 0}, interval: 1h, timeout: 5m, routingId: AODB}
YAML
echo "config: $work/demo.yaml"

say "migrate"
$ff migrate --config "$work/demo.yaml"

say "the AODB pushes today's traffic (window push, FLOPs, ADFT, FDEL, 3 malformed)"
$ff simulate --config "$work/demo.yaml" --create-mailbox --flights 30 --malformed 3 >"$work/simulate1.out"
tail -n 3 "$work/simulate1.out"

say "pump: requests today's full-day schedule, then drains the mailbox"
$ff pump --config "$work/demo.yaml" --drain 2>"$work/pump1.log"

say "the AODB answers the request with a RESP schedule"
$ff simulate --config "$work/demo.yaml" --flights 30 --traffic=false >"$work/simulate2.out"
head -n 2 "$work/simulate2.out"

say "pump: applies the full-day snapshot and the rest"
$ff pump --config "$work/demo.yaml" --drain 2>"$work/pump2.log"

say "ledger"
$ff ledger --config "$work/demo.yaml"

say "mailbox results"
mariadb -h 127.0.0.1 -u root flightfeed_demo_mbx -e \
  "SELECT CMINMSGS_PROC_RESULT AS result, COUNT(*) AS messages FROM CMINMSGS GROUP BY 1;
   SELECT CMINMSGS_ID AS id, LEFT(CMINMSGS_PROC_NOTE, 100) AS note FROM CMINMSGS WHERE CMINMSGS_PROC_RESULT <> 'SUCCEEDED';"

$ff export --config "$work/demo.yaml" >"$work/export.jsonl"
say "current state (export: $(wc -l <"$work/export.jsonl") flights; the first 2)"
head -n 2 "$work/export.jsonl"

say "Kafka, read back with kcat (an independent librdkafka client, read_committed as consumers must read)"
kcat -C -X isolation.level=read_committed -b "127.0.0.1:$port" -t KAFKA_SCHD -o beginning -e -q -f '%k %h\n' >"$work/kafka_schd.txt"
kcat -C -X isolation.level=read_committed -b "127.0.0.1:$port" -t KAFKA_MSG -o beginning -e -q >"$work/kafka_msg.txt"
echo "KAFKA_SCHD: $(wc -l <"$work/kafka_schd.txt") records (full state, coalesced per FLID); KAFKA_MSG: $(wc -l <"$work/kafka_msg.txt") change notices"
head -n 3 "$work/kafka_schd.txt"
head -n 2 "$work/kafka_msg.txt"

say "done — pump logs in $work/pump1.log and $work/pump2.log"
