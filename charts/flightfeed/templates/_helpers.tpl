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

{{/* "true" when the manager takes the legacy Leases too (leaseMigration:
true, or auto during helm upgrade). */}}
{{- define "flightfeed.leaseMigration" -}}
{{- $m := toString .Values.leaseMigration }}
{{- if or (eq $m "true") (and (eq $m "auto") .Release.IsUpgrade) }}true{{ else }}false{{ end }}
{{- end }}

{{/* "true" when the chart makes the ServiceMonitor's scrape token: a
ServiceAccount bound to the metrics-reader ClusterRole and its token Secret
(monitoring.serviceMonitor.authorization.secretName empty). */}}
{{- define "flightfeed.scraperCreate" -}}
{{- $sm := .Values.monitoring.serviceMonitor }}
{{- if and $sm.enabled .Values.metrics.enabled .Values.metrics.secure (not $sm.authorization.secretName) }}true{{ else }}false{{ end }}
{{- end }}

{{/* The ServiceAccount (and token Secret) the chart makes for Prometheus's
scrapes. */}}
{{- define "flightfeed.scraperName" -}}
{{- printf "%s-metrics-scraper" (include "flightfeed.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
