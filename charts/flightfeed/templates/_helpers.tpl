{{/* Chart name. */}}
{{- define "flightfeed.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects. */}}
{{- define "flightfeed.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "flightfeed.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "flightfeed.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the manager pods. */}}
{{- define "flightfeed.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flightfeed.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Service account of the manager. */}}
{{- define "flightfeed.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "flightfeed.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator's image: no default registry (none publishes one), so an
install from outside this repository names its own, e.g.
ghcr.io/example/flightfeed (make docker-build IMG=...). */}}
{{- define "flightfeed.image" -}}
{{- printf "%s:%s" (include "flightfeed.imageRepository" .) (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "flightfeed.imageRepository" -}}
{{- required "image.repository is required: the registry-qualified repository of the flightfeed image you pushed (e.g. --set image.repository=ghcr.io/example/flightfeed; push a release's image archive with skopeo copy oci-archive:flightfeed-image-VERSION.tar docker://ghcr.io/example/flightfeed:VERSION, or build one with make docker-build IMG=ghcr.io/example/flightfeed:TAG and docker push it)" .Values.image.repository }}
{{- end }}

{{/* The ClusterRole granting get on Secrets that the operator binds itself
to, by a RoleBinding of the same name, in each namespace holding a
FlightFeed (--secret-reader-clusterrole). */}}
{{- define "flightfeed.secretReader" -}}
{{- printf "%s-secret-reader" (include "flightfeed.fullname" .) }}
{{- end }}

{{/* The ClusterRoleBinding to system:auth-delegator that the chart makes
with no subjects and whose subjects the operator keeps equal to the pump
ServiceAccounts (--auth-delegator-binding). Not 0.8.0's name
(<fullname>-pumps-auth-delegator): that one the operator made itself, and
Helm refuses to take over an object it did not make. */}}
{{- define "flightfeed.authDelegator" -}}
{{- printf "%s-pump-auth-delegator" (include "flightfeed.fullname" .) }}
{{- end }}

{{/* The operator's user name in API requests (its ServiceAccount's), which
the admission policy matches. */}}
{{- define "flightfeed.operatorUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "flightfeed.serviceAccountName" .) }}
{{- end }}

{{/* The pump pods' defaults (internal/feedobjects.PumpDefaults), the file
`flightfeed manager --pump-defaults` reads: values pump.*, the hardened
security contexts, the ports, lease timings, log level and the
NetworkPolicy. */}}
{{- define "flightfeed.pumpDefaults" -}}
{{- $p := .Values.pump -}}
{{- $np := .Values.networkPolicy -}}
image: {{ printf "%s:%s" ($p.image.repository | default (include "flightfeed.imageRepository" .)) ($p.image.tag | default (.Values.image.tag | default .Chart.AppVersion)) | quote }}
imagePullPolicy: {{ $p.image.pullPolicy | default .Values.image.pullPolicy }}
{{- with $p.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.resourceBounds }}
resourceBounds:
  {{- range $k, $v := . }}
  {{- if $v }}
  {{ $k }}: {{ $v | quote }}
  {{- end }}
  {{- end }}
{{- end }}
{{- with $p.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
allowPlacementFromSpec: {{ $p.allowPlacementFromSpec }}
{{- with $p.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
podSecurityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
terminationGracePeriod: {{ printf "%ds" (int $p.terminationGracePeriodSeconds) }}
args:
  - --lease-duration={{ .Values.lease.duration }}
  - --renew-deadline={{ .Values.lease.renewDeadline }}
  - --retry-period={{ .Values.lease.retryPeriod }}
  - --secret-resync-period={{ .Values.secretResyncPeriod }}
  - --metrics-secure={{ .Values.metrics.secure }}
  - --api-max-concurrent-requests={{ .Values.api.maxConcurrentRequests }}
  - --zap-log-level={{ .Values.logLevel }}
  {{- range $p.extraArgs }}
  - {{ . | quote }}
  {{- end }}
{{- with $p.extraEnv }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
# -1: not served.
ports:
  metrics: {{ if .Values.metrics.enabled }}{{ .Values.metrics.port }}{{ else }}-1{{ end }}
  probes: {{ .Values.probes.port }}
  api: {{ if .Values.api.enabled }}{{ .Values.api.port }}{{ else }}-1{{ end }}
{{- with $p.podLabels }}
podLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.podAnnotations }}
podAnnotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if include "flightfeed.pumpCertManager" . }}
# cert-manager issues each feed's pump certificate, for its Service's names
# only: by the feed namespace's own CA, which the operator keeps, unless an
# issuer of the user's is named.
{{- $ref := dig "certManager" "issuerRef" dict $p }}
certificate:
  {{- if $ref.name }}
  issuerRef:
    name: {{ $ref.name }}
    kind: {{ $ref.kind | default "ClusterIssuer" }}
    group: {{ $ref.group | default "cert-manager.io" }}
  {{- end }}
  clusterDomain: {{ dig "certManager" "clusterDomain" "cluster.local" $p }}
{{- end }}
{{- $sm := .Values.monitoring.serviceMonitor }}
{{- if and $sm.enabled .Values.metrics.enabled }}
# Each feed's ServiceMonitor, in its namespace. Over HTTPS only with the
# certificate above and the chart's scraper (a token for the feed alone);
# otherwise the operator writes none.
serviceMonitor:
  interval: {{ $sm.interval }}
  {{- with $sm.labels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  plainHTTP: {{ not .Values.metrics.secure }}
{{- end }}
{{- if $np.enabled }}
networkPolicy:
  # Metrics and the read API: from the labelled namespaces and the API
  # server's addresses (its service proxy).
  ingressFrom:
    - namespaceSelector:
        matchLabels:
          {{- toYaml $np.ingressNamespaceLabels | nindent 10 }}
    {{- range $np.egress.apiServer.cidrs }}
    - ipBlock: {cidr: {{ . | quote }}}
    {{- end }}
  # DNS, and any rule the values add; each feed's own mailbox, database
  # and brokers are added per feed by the operator.
  egress:
    - ports:
        {{- range $np.egress.dns.ports }}
        - {port: {{ . }}, protocol: UDP}
        - {port: {{ . }}, protocol: TCP}
        {{- end }}
      {{- with (dig "to" list $np.egress.dns) }}
      to:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- range $name := list "mailbox" "database" "brokers" }}
    {{- $e := index $np.egress $name }}
    {{- if $e.ports }}
    # {{ $name }}: the ports the values list, for every feed
    - ports:
        {{- range $e.ports }}
        - {port: {{ . }}, protocol: TCP}
        {{- end }}
      {{- with $e.cidrs }}
      to:
        {{- range . }}
        - ipBlock: {cidr: {{ . | quote }}}
        {{- end }}
      {{- end }}
    {{- end }}
    {{- end }}
  {{- with $np.egress.apiServer }}
  apiServer:
    ports: {{ toJson (.ports | default list) }}
    {{- with .cidrs }}
    cidrs: {{ toJson . }}
    {{- end }}
  {{- end }}
  {{- range $name := list "mailbox" "database" "brokers" }}
  {{- with (index $np.egress $name).cidrs }}
  {{ $name }}:
    cidrs: {{ toJson . }}
  {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* "true" when the chart makes the ServiceMonitor's scrape token: a
ServiceAccount bound to the metrics-reader ClusterRole and its token Secret
(monitoring.serviceMonitor.authorization.secretName empty). */}}
{{- define "flightfeed.scraperCreate" -}}
{{- $sm := .Values.monitoring.serviceMonitor }}
{{- if and $sm.enabled .Values.metrics.enabled .Values.metrics.secure (not $sm.authorization.secretName) }}true{{ else }}false{{ end }}
{{- end }}

{{/* The ServiceAccount the chart makes for Prometheus's scrapes. */}}
{{- define "flightfeed.scraperName" -}}
{{- printf "%s-metrics-scraper" (include "flightfeed.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret the operator keeps its short-lived tokens in (a new name:
0.5.0's was a kubernetes.io/service-account-token Secret, whose type cannot
change). */}}
{{- define "flightfeed.scraperTokenSecret" -}}
{{- printf "%s-metrics-scraper-token" (include "flightfeed.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Whether the chart makes a cert-manager Certificate for the operator's
metrics: metrics served over HTTPS, no certSecret of the user's, and
metrics.certManager.enabled true, or auto while the API server serves
cert-manager.io/v1.
*/}}
{{- define "flightfeed.metricsCertManager" -}}
{{- $m := .Values.metrics -}}
{{- $on := toString $m.certManager.enabled -}}
{{- if and $m.enabled $m.secure (not $m.certSecret) (or (eq $on "true") (and (eq $on "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1"))) -}}
true
{{- end -}}
{{- end }}

{{/*
The Secret of the operator's metrics certificate: metrics.certSecret, or
the cert-manager Certificate's; empty for the self-signed one.
*/}}
{{- define "flightfeed.metricsCertSecret" -}}
{{- if .Values.metrics.certSecret -}}
{{ .Values.metrics.certSecret }}
{{- else if include "flightfeed.metricsCertManager" . -}}
{{ include "flightfeed.fullname" . }}-metrics-cert
{{- end -}}
{{- end }}

{{/*
Whether cert-manager issues the pump pods' certificates (values
pump.certManager): an endpoint that serves TLS (the read API, or metrics
over HTTPS) and enabled true, or auto while the API server serves
cert-manager.io/v1. dig: a release upgraded with --reuse-values from a
chart without pump.certManager has no such values.
*/}}
{{- define "flightfeed.pumpCertManager" -}}
{{- $c := .Values.pump.certManager | default dict -}}
{{- $on := toString (dig "enabled" "auto" $c) -}}
{{- if and (or .Values.api.enabled (and .Values.metrics.enabled .Values.metrics.secure)) (or (eq $on "true") (and (eq $on "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1"))) -}}
true
{{- end -}}
{{- end }}

{{/* The ClusterRole the operator binds itself to in each feed namespace to
keep the feeds' ServiceMonitors' tokens there
(--scrape-token-writer-clusterrole). */}}
{{- define "flightfeed.scrapeTokenWriter" -}}
{{- printf "%s-scrape-token-writer" (include "flightfeed.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
