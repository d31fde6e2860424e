#!/usr/bin/env bash
# Checks the Helm chart in charts/flightfeed: its CRDs and RBAC are the
# generated ones (config/), `helm lint --strict` passes, the templates render
# for the value sets that matter, values.schema.json refuses bad values, and
# the manager runs non-root with a read-only root filesystem, and a real API
# server (envtest, with the Prometheus Operator CRDs) accepts the rendering
# with every monitoring object on (hack/helm-dryrun). Installs the
# pinned helm into the tool cache when it is missing (no network otherwise).
#
#   bash hack/helm-check.sh        (make test runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM_VERSION=v3.21.4
PROMETHEUS_OPERATOR_VERSION=v0.85.0 # its ServiceMonitor and PrometheusRule CRDs (step 4)
cache=${FLIGHTFEED_CACHE:-$HOME/.cache/flightfeed}
helm_dir="$cache/tools/helm-$HELM_VERSION"
helm="$helm_dir/helm"
chart=charts/flightfeed
kube_version=1.37.0
# image.repository has no default (no registry publishes the image): every
# rendering names one, as a user installing from outside this repository must.
image=(--set image.repository=registry.example/flightfeed)

if [ ! -x "$helm" ]; then
  echo "helm-check: installing helm $HELM_VERSION into $helm_dir (first time only)" >&2
  mkdir -p "$helm_dir"
  # Outside the repository's module on purpose: helm is a tool, not a dependency.
  (cd "$helm_dir" && GOFLAGS= GOBIN="$helm_dir" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
fi

fail() { echo "helm-check: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 0. Versions: the chart's version moves with every change to
# charts/ or api/. The commit that last changed Chart.yaml's `version:` line
# (a merge counts by its diff to its first parent) must be at or after every
# commit that changed charts/ or api/; version and appVersion are equal; the
# CHANGELOG has a dated section for it. History only, so a fresh full clone (CI)
# and a worktree give the same answer; uncommitted edits are not judged.
chart_version=$(sed -n 's/^version: *//p' "$chart/Chart.yaml")
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$chart/Chart.yaml")
[ -n "$chart_version" ] && [ "$chart_version" = "$app_version" ] ||
  fail "$chart/Chart.yaml: version ($chart_version) and appVersion ($app_version) must be equal"
# A version's heading carries the day it was cut: "## 0.9.0 — 2026-12-06".
grep -qE "^## ${chart_version//./\\.} — [0-9]{4}-[0-9]{2}-[0-9]{2}\$" CHANGELOG.md ||
  fail "CHANGELOG.md has no section '## $chart_version — YYYY-MM-DD'"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  [ "$(git rev-parse --is-shallow-repository)" = false ] ||
    fail "a shallow clone cannot tell when the chart's version last moved: git fetch --unshallow"
  bumped=$(git log -1 --diff-merges=first-parent --no-patch --format=%H -G'^version:' -- "$chart/Chart.yaml")
  [ -n "$bumped" ] || fail "no commit sets $chart/Chart.yaml's version"
  since=$(git rev-list --abbrev-commit "$bumped..HEAD" -- charts api | tr '\n' ' ' | sed 's/ $//')
  [ -z "$since" ] || fail "charts/ or api/ changed in $since after the chart's version last moved ($(git rev-parse --short "$bumped"), $chart_version): raise version and appVersion in $chart/Chart.yaml and add a CHANGELOG.md section"
else
  echo "helm-check: not a git checkout; the version check needs the history, skipped" >&2
fi

# 1. The chart carries the generated CRDs and RBAC rules, unchanged.
for f in config/crd/bases/*.yaml; do
  cmp -s "$f" "$chart/files/crds/$(basename "$f")" ||
    fail "$chart/files/crds/$(basename "$f") differs from $f: run 'cp config/crd/bases/*.yaml $chart/files/crds/'"
done
for f in "$chart"/files/crds/*.yaml; do
  [ -e "config/crd/bases/$(basename "$f")" ] || fail "$f has no counterpart in config/crd/bases: remove it"
done
cmp -s config/rbac/role.yaml "$chart/files/rbac/role.yaml" ||
  fail "$chart/files/rbac/role.yaml differs from config/rbac/role.yaml: run 'cp config/rbac/role.yaml $chart/files/rbac/'"
cmp -s config/rbac/pump/role.yaml "$chart/files/rbac/pump-role.yaml" ||
  fail "$chart/files/rbac/pump-role.yaml differs from config/rbac/pump/role.yaml: run 'make manifests'"
# NOTES embeds the minimal sample (a chart installed from a registry has no
# config/samples beside it).
cmp -s config/samples/flightfeed_v1alpha1_flightfeed.yaml "$chart/files/samples/flightfeed.yaml" ||
  fail "$chart/files/samples/flightfeed.yaml differs from config/samples/flightfeed_v1alpha1_flightfeed.yaml: copy it"

# The chart's README is generated from values.yaml's comments (helm-docs
# style, hack/chartdocs): it must not drift.
go run ./hack/chartdocs -check "$chart" || fail "charts/flightfeed/README.md is stale: run 'go run ./hack/chartdocs'"

# 2. Lint.
"$helm" lint --strict --kube-version "$kube_version" "$chart" "${image[@]}" >"$work/lint" 2>&1 || { cat "$work/lint" >&2; fail "helm lint failed"; }

render() { # name, then --set arguments
  local name=$1; shift
  "$helm" template ff "$chart" --namespace flightfeed-system --kube-version "$kube_version" --skip-tests "${image[@]}" "$@" >"$work/$name.yaml" 2>"$work/$name.err" ||
    { cat "$work/$name.err" >&2; fail "render $name failed"; }
}
count() { grep -c "^kind: $2\$" "$work/$1.yaml" || true; }
# has/hasnot name [--] pattern (the -- was once taken for the pattern,
# which made those checks match any rendering).
has() { local n=$1; shift; [ "$1" = -- ] && shift; grep -qE -- "$1" "$work/$n.yaml" || fail "$n: rendered chart lacks /$1/"; }
hasnot() { local n=$1; shift; [ "$1" = -- ] && shift; ! grep -qE -- "$1" "$work/$n.yaml" || fail "$n: rendered chart has /$1/"; }

# 3. Default values: everything, CRDs kept, two hardened operator replicas
# (leader-elected) and the pump pods' defaults.
render default
# Two Roles: the leader election's, and in namespace default the one that
# lets the operator read the API server's addresses (the pumps' egress).
for kind in CustomResourceDefinition:2 Deployment:1 ClusterRole:6 ClusterRoleBinding:2 Role:2 RoleBinding:2 ServiceAccount:1 Service:1 PodDisruptionBudget:1 NetworkPolicy:1 ConfigMap:1 \
  ValidatingAdmissionPolicy:4 ValidatingAdmissionPolicyBinding:4; do
  [ "$(count default "${kind%%:*}")" = "${kind##*:}" ] || fail "default: want ${kind##*:} ${kind%%:*}, got $(count default "${kind%%:*}")"
done
has default 'name: flightfeeds.flightfeed.aero'
has default 'name: flightfeeddays.flightfeed.aero'
has default 'helm.sh/resource-policy: keep'
has default 'replicas: 2'
has default 'runAsNonRoot: true'
has default 'readOnlyRootFilesystem: true'
has default 'allowPrivilegeEscalation: false'
has default 'path: /healthz'
has default 'path: /readyz'
has default 'fieldPath: metadata.name'
# The operator: control plane only, leader-elected, its pump defaults
# mounted and their checksum on the pod template.
has default -- '- --leader-elect$'
has default -- '- --pump-defaults=/etc/flightfeed/pump/defaults.yaml'
has default -- '- --secret-reader-clusterrole=ff-flightfeed-secret-reader'
has default -- '- --auth-delegator-binding=ff-flightfeed-pump-auth-delegator'
# The pumps' auth-delegator binding is the chart's; the operator creates no
# ClusterRoleBinding and writes only where a FlightFeed is (the admission
# policies; internal/pumppod/secretpath_test.go tries it).
has default 'name: ff-flightfeed-pump-auth-delegator$'
has default 'parameterNotFoundAction: Deny'
has default 'name: SERVICE_ACCOUNT'
has default 'checksum/pump-defaults: [0-9a-f]{64}'
has default 'name: ff-flightfeed-pump-defaults'
hasnot default -- '--api-bind-address'
hasnot default 'containerPort: 8082'
hasnot default 'escalate'
# The pump pods' defaults: the operator's image, lease timings, the read API.
has default 'image: "registry.example/flightfeed:'
has default -- '- --lease-duration=15s'
has default -- '- --secret-resync-period=1m'
has default -- '- --metrics-secure=true'
has default 'api: 8082'
has default 'terminationGracePeriod: 45s'
has default 'memory: 64Mi'
has default 'ingressFrom:'
# Secure metrics by default, and the ClusterRole scrapers are bound to.
has default '- --metrics-secure=true'
has default 'name: ff-flightfeed-metrics-reader'
has default 'name: ff-flightfeed-operations$'
has default '"/metrics"'
hasnot default 'api-cert-dir'
hasnot default 'metrics-cert-dir'
has default -- '- --zap-log-level=info'
has default 'x-kubernetes-list-map-keys'
has default 'fieldPath: metadata.namespace'
has default 'rbac.authorization.k8s.io/aggregate-to-view: "true"'
has default 'rbac.authorization.k8s.io/aggregate-to-edit: "true"'
has default 'policyTypes: \[Ingress, Egress\]'
# The pumps' egress: DNS to the DNS pods, the API server, and per feed what
# it resolves to (the operator); no port opened to anywhere for every feed.
has default 'k8s-app: kube-dns'
has default 'name: ff-flightfeed-apiserver-addresses'
hasnot default 'port: (3306|5432|9092)'
hasnot default -- '--legacy-leases'
hasnot default -- '--namespaces'
has default 'resources:'

# 4. The switches.
render nocrds --set crds.enabled=false
[ "$(count nocrds CustomResourceDefinition)" = 0 ] || fail "crds.enabled=false still renders CRDs"
render nokeep --set crds.keep=false
[ "$(count nokeep CustomResourceDefinition)" = 2 ] || fail "crds.keep=false lost the CRDs"
hasnot nokeep 'helm.sh/resource-policy'
render quiet --set metrics.enabled=false --set api.enabled=false --set replicaCount=1
[ "$(count quiet Service)" = 0 ] || fail "no metrics still renders the operator's Service"
[ "$(count quiet PodDisruptionBudget)" = 0 ] || fail "one replica still renders a PodDisruptionBudget"
has quiet -- '- --metrics-bind-address=0'
has quiet 'metrics: -1'
has quiet 'api: -1'
render pumpvalues --set pump.image.repository=registry.example/ff --set pump.image.tag=v9 --set 'pump.extraArgs={--status-interval=10s}' \
  --set pump.nodeSelector.pool=feeds --set pump.priorityClassName=feeds --set 'pump.topologySpreadConstraints[0].maxSkew=1' \
  --set 'pump.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone' --set 'pump.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule'
has pumpvalues 'image: "registry.example/ff:v9"'
has pumpvalues -- '- "--status-interval=10s"'
has pumpvalues 'pool: feeds'
has pumpvalues 'priorityClassName: feeds'
has pumpvalues 'topologyKey: topology.kubernetes.io/zone'
render spread --set 'topologySpreadConstraints[0].maxSkew=1' --set 'topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone' \
  --set 'topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway'
has spread 'whenUnsatisfiable: ScheduleAnyway'
hasnot default '^      topologySpreadConstraints:'
has spread '^      topologySpreadConstraints:'
render apicap --set api.maxConcurrentRequests=3
has apicap -- '- --api-max-concurrent-requests=3'
render norbac --set rbac.create=false --set rbac.aggregate=false --set serviceAccount.create=false --set serviceAccount.name=existing
[ "$(count norbac ClusterRole)" = 0 ] || fail "rbac.create=false still renders a ClusterRole"
[ "$(count norbac Role)" = 0 ] || fail "rbac.create=false still renders a Role"
has norbac 'serviceAccountName: existing'

# The RBAC modes (internal/pumppod/rbac_test.go asserts their exact rules):
# the namespaced one has a Role and RoleBinding per watched namespace plus the
# leader election Role; its ClusterRole keeps only the auth-delegator
# binding's rights.
render namespaced --set 'watchNamespaces={ops,ground}' --is-upgrade \
  --set 'networkPolicy.egress.database.cidrs={10.0.0.0/8}' --set 'networkPolicy.egress.brokers.ports={9092,9093}'
[ "$(count namespaced Role)" = 4 ] || fail "namespaced: want 4 Roles, got $(count namespaced Role)"
[ "$(count namespaced RoleBinding)" = 4 ] || fail "namespaced: want 4 RoleBindings, got $(count namespaced RoleBinding)"
has namespaced -- '- --namespaces=ops,ground'
hasnot namespaced -- '--legacy-leases'
has namespaced 'namespace: ground'
has namespaced 'cidrs: \["10.0.0.0/8"\]'
has namespaced 'port: 9093, protocol: TCP'
render nonetpol --set networkPolicy.enabled=false
[ "$(count nonetpol NetworkPolicy)" = 0 ] || fail "networkPolicy.enabled=false still renders a NetworkPolicy"
render noadmission --set rbac.admissionPolicy=false
[ "$(count noadmission ValidatingAdmissionPolicy)" = 0 ] || fail "rbac.admissionPolicy=false still renders an admission policy"

render insecure --set metrics.secure=false --set monitoring.serviceMonitor.enabled=true
has insecure '- --metrics-secure=false'
has insecure 'scheme: http$'
hasnot insecure 'metrics-reader'
hasnot insecure 'metrics-scraper'
hasnot insecure 'authorization:'
render certs --set metrics.certSecret=metrics-tls --set monitoring.serviceMonitor.enabled=true \
  --set 'metrics.scrapers[0].namespace=monitoring' --set 'metrics.scrapers[0].name=prometheus-k8s'
has certs '- --metrics-cert-dir=/etc/flightfeed/metrics-certs'
has certs 'secretName: metrics-tls'
has certs 'key: ca.crt'
has certs 'serverName: ff-flightfeed.flightfeed-system.svc'
has certs 'name: prometheus-k8s'
[ "$(count certs ClusterRoleBinding)" = 3 ] || fail "certs: metrics.scrapers renders no ClusterRoleBinding"
# The scrape token from a Secret of the user's: no scraper of the chart's.
render ownToken --set monitoring.serviceMonitor.enabled=true --set monitoring.serviceMonitor.authorization.secretName=prom-token \
  --set monitoring.serviceMonitor.authorization.key=jwt --set 'metrics.scrapers[0].namespace=monitoring' --set 'metrics.scrapers[0].name=prometheus-k8s'
has ownToken 'name: prom-token'
has ownToken 'key: jwt'
hasnot ownToken 'metrics-scraper'
hasnot ownToken 'scraper-token'
[ "$(count ownToken Secret)" = 0 ] || fail "ownToken: renders a token Secret beside the user's"
if "$helm" template ff "$chart" --kube-version "$kube_version" "${image[@]}" --set monitoring.serviceMonitor.enabled=true --set rbac.create=false \
  --set serviceAccount.create=false --set serviceAccount.name=existing >/dev/null 2>"$work/unbound.err"; then
  fail "rbac.create=false with the chart's scraper renders a ServiceMonitor whose token nobody binds"
fi
grep -q "authorization.secretName is required" "$work/unbound.err" || { cat "$work/unbound.err" >&2; fail "unbound scraper refused for another reason"; }

render monitoring --set monitoring.serviceMonitor.enabled=true --set monitoring.prometheusRule.enabled=true --set monitoring.grafanaDashboard.enabled=true \
  --set 'metrics.scrapers[0].namespace=monitoring' --set 'metrics.scrapers[0].name=prometheus-k8s'
has monitoring 'scheme: https'
# The non-deprecated authorization (a bearer token from a Secret), never
# bearerTokenFile: the chart's scraper ServiceAccount, bound to the
# metrics-reader ClusterRole, and the Secret the operator keeps its
# short-lived tokens in (never a legacy service-account-token Secret),
# with a Role for that one Secret and that one ServiceAccount's tokens.
has monitoring 'type: Bearer'
has monitoring 'name: ff-flightfeed-metrics-scraper-token$'
has monitoring -- '- --scraper-service-account=ff-flightfeed-metrics-scraper$'
has monitoring -- '- --scraper-token-secret=ff-flightfeed-metrics-scraper-token$'
has monitoring -- '- --scraper-token-ttl=24h$'
has monitoring 'resources: \[serviceaccounts/token\]'
has monitoring 'resourceNames: \[ff-flightfeed-metrics-scraper\]'
hasnot monitoring 'kubernetes.io/service-account-token'
hasnot monitoring 'kubernetes.io/service-account.name'
[ "$(count monitoring Secret)" = 1 ] || fail "monitoring: want the scraper's token Secret"
for f in "$work"/*.yaml; do
  ! grep -q "bearerTokenFile" "$f" || fail "$(basename "$f" .yaml): renders the deprecated bearerTokenFile"
done
has monitoring 'insecureSkipVerify: true'
# One ServiceMonitor, the operator's: the operator writes each feed's in
# the feed's namespace (no ServiceMonitor of the chart selects every
# namespace); two ConfigMaps (the pump defaults, the dashboard).
for kind in ServiceMonitor:1 PrometheusRule:1 ConfigMap:2; do
  [ "$(count monitoring "${kind%%:*}")" = "${kind##*:}" ] || fail "monitoring: want ${kind##*:} ${kind%%:*}, got $(count monitoring "${kind%%:*}")"
done
has monitoring 'grafana_dashboard: "1"'
has monitoring 'alert: FlightFeedHeadBlocked'
has monitoring 'time\(\) - flightfeed_head_blocked_since_timestamp_seconds > 300'
# Absolute runbook links a pager can open, from one value.
has monitoring 'runbook_url: "https://github.com/flightfeed/flightfeed/blob/main/docs/operations.md#flightfeedheadblocked"'
hasnot monitoring 'runbook: '
# With cert-manager: each feed namespace's own CA (the operator's), no
# ClusterIssuer of the chart's; the operator keeps the feeds' tokens in
# their namespaces (the token writer it binds itself to).
render pumpcerts --set monitoring.serviceMonitor.enabled=true --api-versions cert-manager.io/v1 --api-versions monitoring.coreos.com/v1
hasnot pumpcerts 'kind: ClusterIssuer'
hasnot pumpcerts 'flightfeed-pump$'
hasnot pumpcerts 'any: true'
has pumpcerts -- '- --scrape-token-writer-clusterrole=ff-flightfeed-scrape-token-writer$'
has pumpcerts 'resourceNames: \[flightfeed-pump-scrape-tokens\]'
has pumpcerts 'clusterDomain: cluster.local'
[ "$(count pumpcerts ServiceMonitor)" = 1 ] || fail "pumpcerts: want the operator's ServiceMonitor alone"
render runbooks --set monitoring.prometheusRule.enabled=true --set monitoring.runbookBaseURL=https://wiki.example/ff
has runbooks 'runbook_url: "https://wiki.example/ff#flightfeednoleader"'
for kind in ServiceMonitor PrometheusRule; do
  [ "$(count default "$kind")" = 0 ] || fail "default: renders a $kind, the monitoring objects are off by default"
done
hasnot default 'grafana_dashboard' 
"$helm" lint --strict --kube-version "$kube_version" "$chart" "${image[@]}" --set monitoring.serviceMonitor.enabled=true \
  --set monitoring.prometheusRule.enabled=true --set monitoring.grafanaDashboard.enabled=true >"$work/lint" 2>&1 ||
  { cat "$work/lint" >&2; fail "helm lint with the monitoring objects failed"; }

# The API server accepts that rendering: a real kube-apiserver (envtest) with
# the Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, taken from
# its Go module at a pinned version and cached, established, then every object
# server-side dry-run applied (the CRDs' schemas validate the monitoring objects).
prom_dir="$cache/prometheus-operator-crds-$PROMETHEUS_OPERATOR_VERSION"
if [ ! -s "$prom_dir/monitoring.coreos.com_servicemonitors.yaml" ] || [ ! -s "$prom_dir/monitoring.coreos.com_prometheusrules.yaml" ]; then
  echo "helm-check: caching the Prometheus Operator $PROMETHEUS_OPERATOR_VERSION CRDs in $prom_dir (first time only)" >&2
  mod_dir=$(cd "$work" && GOFLAGS= go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$mod_dir/example/prometheus-operator-crd" ] || fail "go mod download of the Prometheus Operator $PROMETHEUS_OPERATOR_VERSION gave no CRDs"
  mkdir -p "$prom_dir"
  cp "$mod_dir"/example/prometheus-operator-crd/monitoring.coreos.com_{servicemonitors,prometheusrules}.yaml "$prom_dir/"
fi
dryrun="$cache/tools/helm-dryrun"
go build -o "$dryrun" ./hack/helm-dryrun || fail "build hack/helm-dryrun failed"
KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(bash hack/envtest-assets.sh)} "$dryrun" \
  -crd "$prom_dir/monitoring.coreos.com_servicemonitors.yaml" -crd "$prom_dir/monitoring.coreos.com_prometheusrules.yaml" \
  "$work/monitoring.yaml" "$work/namespaced.yaml" >"$work/dryrun" 2>&1 || { cat "$work/dryrun" >&2; fail "the API server refuses the rendering with the monitoring objects or the namespaced RBAC"; }
grep -q "accepts $(cat "$work/monitoring.yaml" "$work/namespaced.yaml" | grep -c "^kind: ") objects" "$work/dryrun" || { cat "$work/dryrun" >&2; fail "the dry run did not apply every rendered object"; }

# The migration Job hook (opt-in): one container per listed feed, before
# install and upgrade, with its config Secret; off by default.
[ "$(count default Job)" = 0 ] || fail "default: renders a migration Job, it is opt-in"
has default 'terminationGracePeriodSeconds: 30'
render migrate --set migrations.job.enabled=true --set 'migrations.job.feeds[0].name=pek' \
  --set 'migrations.job.feeds[0].configSecret=pek-config' --set 'migrations.job.feeds[1].name=ams' \
  --set 'migrations.job.feeds[1].configSecret=ams-config'
[ "$(count migrate Job)" = 1 ] || fail "migrations.job.enabled: want 1 Job, got $(count migrate Job)"
has migrate '"helm.sh/hook": pre-install,pre-upgrade'
has migrate 'args: \["migrate", "--config", "/etc/flightfeed/pek/feed.yaml"\]'
has migrate 'secretName: ams-config'
has migrate 'automountServiceAccountToken: false'

# The `helm test` hook: the selftest Pod of the operator's own image, with
# its own ServiceAccount and read-only RBAC; all of it test hooks.
"$helm" template ff "$chart" --namespace flightfeed-system --kube-version "$kube_version" "${image[@]}" \
  --show-only templates/tests/selftest.yaml >"$work/tests.yaml" 2>"$work/tests.err" || { cat "$work/tests.err" >&2; fail "render the test hook failed"; }
for kind in Pod:1 ServiceAccount:1 ClusterRole:1 ClusterRoleBinding:1 Role:1 RoleBinding:1; do
  [ "$(count tests "${kind%%:*}")" = "${kind##*:}" ] || fail "tests: want ${kind##*:} ${kind%%:*}, got $(count tests "${kind%%:*}")"
done
[ "$(grep -c '"helm.sh/hook": test' "$work/tests.yaml")" = 6 ] || fail "tests: every object must be a test hook"
has tests '- selftest'
has tests 'component=manager'
has tests 'image: "registry.example/flightfeed:'

# 5. The values schema refuses what would break the operator or its hardening.
refuse() { # what, --set arguments
  local what=$1; shift
  if "$helm" template ff "$chart" --kube-version "$kube_version" "${image[@]}" "$@" >/dev/null 2>"$work/refused"; then
    fail "values schema accepted $what"
  fi
  grep -q "values don't meet the specifications of the schema" "$work/refused" || { cat "$work/refused" >&2; fail "$what refused for another reason"; }
}
refuse "zero replicas" --set replicaCount=0
refuse "a bad lease duration" --set lease.duration=soon
refuse "a writable root filesystem" --set securityContext.readOnlyRootFilesystem=false
refuse "a root pod" --set podSecurityContext.runAsNonRoot=false
refuse "an unknown value" --set replicas=3
refuse "a port out of range" --set api.port=70000
refuse "a read API cap of zero" --set api.maxConcurrentRequests=0
refuse "an unknown log level" --set logLevel=loud
refuse "a relative runbook URL" --set monitoring.runbookBaseURL=docs/operations.md
refuse "a zero alert threshold" --set monitoring.prometheusRule.headBlockedSeconds=0
refuse "a bad watched namespace" --set 'watchNamespaces={Ops}'
refuse "the removed lease migration" --set leaseMigration=auto
refuse "an unknown pump value" --set pump.replicas=3
refuse "a bad pump pull policy" --set pump.image.pullPolicy=Sometimes
refuse "a bad operator lease" --set leaderElection.leaseDuration=soon
refuse "a NetworkPolicy port out of range" --set 'networkPolicy.egress.database.ports={70000}'
refuse "a NetworkPolicy CIDR that is none" --set 'networkPolicy.egress.mailbox.cidrs={mailbox.example}'
refuse "metrics.secure not a boolean" --set-string metrics.secure=maybe
refuse "a scraper without a namespace" --set 'metrics.scrapers[0].name=prometheus'
refuse "a grace period shorter than a pump's stop and last status" --set pump.terminationGracePeriodSeconds=30
refuse "a grace period shorter than the operator's shutdown" --set terminationGracePeriodSeconds=10
refuse "a migration feed without its Secret" --set 'migrations.job.feeds[0].name=pek'
refuse "an empty scrape token key" --set monitoring.serviceMonitor.authorization.key=
refuse "a scraper token shorter than the API server issues" --set monitoring.serviceMonitor.tokenTTL=9m
refuse "a scraper token lifetime in seconds" --set monitoring.serviceMonitor.tokenTTL=3600s
refuse "a scrape token Secret name that is none" --set monitoring.serviceMonitor.authorization.secretName=Prom_Token

# No image repository: refused with a message naming the value.
if "$helm" template ff "$chart" --kube-version "$kube_version" >/dev/null 2>"$work/noimage.err"; then
  fail "the chart renders without image.repository (an image no registry serves)"
fi
grep -q "image.repository is required" "$work/noimage.err" || { cat "$work/noimage.err" >&2; fail "no image.repository refused for another reason"; }

# 6. NOTES (which `helm template` does not print), rendered from a copy of
# the chart in which a ConfigMap holds them, with only image.repository set:
# the minimal sample embedded, no path into this repository.
notes_chart="$work/notes-chart"
cp -r "$chart" "$notes_chart"
cp "$chart/templates/NOTES.txt" "$notes_chart/notes.txt"
cat >"$notes_chart/templates/zz-notes.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: notes}
data:
  notes: |
    {{- tpl (.Files.Get "notes.txt") . | nindent 4 }}
EOF
for extra in "" "--set crds.enabled=false --set migrations.job.enabled=true --set watchNamespaces={feeds}"; do
  # shellcheck disable=SC2086 # $extra is a word list on purpose
  "$helm" template ff "$notes_chart" --namespace flightfeed-system --kube-version "$kube_version" "${image[@]}" $extra \
    --show-only templates/zz-notes.yaml >"$work/notes.yaml" 2>"$work/notes.err" || { cat "$work/notes.err" >&2; fail "render NOTES ($extra) failed"; }
  grep -q 'kind: FlightFeed$' "$work/notes.yaml" || fail "NOTES ($extra) do not embed the sample FlightFeed"
  grep -q 'events-kafka-bootstrap.kafka.svc' "$work/notes.yaml" || fail "NOTES ($extra) do not embed config/samples' minimal FlightFeed"
  ! grep -qE 'config/|hack/|README' "$work/notes.yaml" || { grep -nE 'config/|hack/|README' "$work/notes.yaml" >&2; fail "NOTES ($extra) name a path of this repository"; }
done

# 7. The kustomize tree renders too (kubectl carries kustomize).
if command -v kubectl >/dev/null 2>&1; then
  kubectl kustomize config/default >"$work/kustomize.yaml" || fail "kubectl kustomize config/default failed"
  for kind in CustomResourceDefinition Deployment ClusterRole ClusterRoleBinding Role RoleBinding ServiceAccount Namespace NetworkPolicy; do
    grep -q "^kind: $kind\$" "$work/kustomize.yaml" || fail "config/default lacks a $kind"
  done
  kubectl kustomize config/namespaced >"$work/kustomize-namespaced.yaml" || fail "kubectl kustomize config/namespaced failed"
  grep -q -- '- --namespaces=feeds' "$work/kustomize-namespaced.yaml" || fail "config/namespaced does not pass --namespaces"
  # Its only ClusterRoleBindings: the rights around the pumps' auth-delegator
  # binding, and that binding (config/rbac/pump_auth_role.yaml); the feeds'
  # rules are Roles.
  [ "$(grep -c '^kind: ClusterRoleBinding$' "$work/kustomize-namespaced.yaml")" = 2 ] || fail "config/namespaced binds more than the pump auth ClusterRole"
  grep -q 'name: flightfeed-pump-auth-delegator$' "$work/kustomize-namespaced.yaml" || fail "config/namespaced lacks the pumps' auth-delegator binding"
  [ "$(grep -c '^kind: ValidatingAdmissionPolicy$' "$work/kustomize-namespaced.yaml")" = 4 ] || fail "config/namespaced lacks the operator's admission policies"
  grep -q 'name: flightfeed-manager-pump-auth$' "$work/kustomize-namespaced.yaml" || fail "config/namespaced lacks the pump auth ClusterRole"
  # The operator, control plane only: leader-elected, pump defaults mounted,
  # the secret-reader ClusterRole and auth-delegator binding the flags name.
  for want in '- --leader-elect$' '- --pump-defaults=/etc/flightfeed/pump/defaults.yaml' \
    '- --secret-reader-clusterrole=flightfeed-secret-reader' '- --auth-delegator-binding=flightfeed-pump-auth-delegator' \
    'name: flightfeed-secret-reader$' 'name: flightfeed-pump-defaults$' 'networkPolicy:'; do
    grep -qE -- "$want" "$work/kustomize.yaml" || fail "config/default lacks /$want/"
  done
  ! grep -qE 'escalate|containerPort: 8082' "$work/kustomize.yaml" || fail "config/default grants escalate or serves the read API from the operator"
  grep -q 'name: flightfeed-metrics-reader$' "$work/kustomize.yaml" || fail "config/default lacks the metrics-reader ClusterRole"
  kubectl kustomize config/samples >/dev/null || fail "kubectl kustomize config/samples failed"
fi

echo "helm-check: chart OK (helm $HELM_VERSION)"
