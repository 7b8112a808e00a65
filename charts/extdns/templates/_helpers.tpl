{{/* The chart name, or nameOverride, as a DNS label. */}}
{{- define "extdns.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Where namespaced objects go: namespaceOverride, else the release namespace. */}}
{{- define "extdns.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace }}
{{- end }}

{{/* The prefix of object names: fullnameOverride, else the release name, followed by the chart name unless
the release name already contains it. */}}
{{- define "extdns.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := .Values.nameOverride | default .Chart.Name }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "extdns.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "extdns.selectorLabels" -}}
app.kubernetes.io/name: {{ include "extdns.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "extdns.labels" -}}
helm.sh/chart: {{ include "extdns.chart" . }}
{{ include "extdns.selectorLabels" . }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the pod runs as: the created one (named after the release unless named), or an
existing one (`default` unless named). */}}
{{- define "extdns.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "extdns.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{- define "extdns.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default (printf "v%s" .Chart.AppVersion)) }}
{{- end }}

{{/* `provider` is an object with `name`, or (deprecated) the name itself. Defined under external-dns's helper
name, so `provider: null` fails with the error external-dns's chart gives (naming this helper). */}}
{{- define "external-dns.providerName" -}}
{{- if kindIs "string" .Values.provider }}
{{- .Values.provider }}
{{- else }}
{{- .Values.provider.name }}
{{- end }}
{{- end }}
{{- define "extdns.providerName" -}}{{ include "external-dns.providerName" . }}{{- end }}

{{- define "extdns.webhookImage" -}}
{{- if or (empty .image.repository) (empty .image.tag) }}
{{- fail "ERROR: webhook provider needs an image repository and a tag" }}
{{- end }}
{{- printf "%s:%s" .image.repository .image.tag }}
{{- end }}

{{/* "true" when any Gateway API route source is configured. */}}
{{- define "extdns.gatewaySources" -}}
{{- range .Values.sources }}
{{- if hasPrefix "gateway-" . }}true{{ end }}
{{- end }}
{{- end }}

{{/* "true" when the replicas elect a leader: leaderElection.enabled when set, else more than one replica. */}}
{{- define "extdns.leaderElection" -}}
{{- $forced := .Values.leaderElection.enabled }}
{{- if kindIs "bool" $forced }}
{{- if $forced }}true{{ end }}
{{- else if gt (int .Values.replicaCount) 1 }}true
{{- end }}
{{- end }}

{{- define "extdns.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (include "extdns.fullname" .) }}
{{- end }}

{{/* The namespace the sources watch when namespaced. */}}
{{- define "extdns.sourceNamespace" -}}
{{- .Values.sourceNamespace | default (include "extdns.namespace" .) }}
{{- end }}

{{/*
The API group and resource of the DNSEndpoints the crd source reads, "group/resource": external-dns's
`externaldns.k8s.io` `dnsendpoints`, or what `--crd-source-apiversion` and `--crd-source-kind` in extraArgs
(map or list form, `--flag=value`) name, the resource being the kind in lower case plus "s" (the rule
external-dns up to v0.20 addressed it by; extdns asks discovery, which agrees for every kind ending so).
*/}}
{{- define "extdns.crdResource" -}}
{{- $apiVersion := "externaldns.k8s.io/v1alpha1" }}
{{- $kind := "DNSEndpoint" }}
{{- $args := .Values.extraArgs }}
{{- if kindIs "map" $args }}
{{- with get $args "crd-source-apiversion" }}{{ $apiVersion = toString . }}{{ end }}
{{- with get $args "crd-source-kind" }}{{ $kind = toString . }}{{ end }}
{{- else if kindIs "slice" $args }}
{{- range $args }}
{{- $arg := toString . }}
{{- if hasPrefix "--crd-source-apiversion=" $arg }}{{ $apiVersion = trimPrefix "--crd-source-apiversion=" $arg }}{{ end }}
{{- if hasPrefix "--crd-source-kind=" $arg }}{{ $kind = trimPrefix "--crd-source-kind=" $arg }}{{ end }}
{{- end }}
{{- end }}
{{- $group := ternary (first (splitList "/" $apiVersion)) "" (contains "/" $apiVersion) }}
{{- printf "%s/%ss" $group (lower $kind) }}
{{- end }}

{{/* One ServiceMonitor endpoint: `port`, and the scrape settings of `config` that are set. */}}
{{- define "extdns.scrapeEndpoint" -}}
{{- $c := .config | default dict -}}
- port: {{ .port }}
  path: /metrics
  {{- range $key := list "interval" "scheme" "bearerTokenFile" "scrapeTimeout" }}
  {{- with get $c $key }}
  {{ $key }}: {{ . }}
  {{- end }}
  {{- end }}
  {{- range $key := list "tlsConfig" "metricRelabelings" "relabelings" }}
  {{- with get $c $key }}
  {{ $key }}:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
{{- end }}

{{/* external-dns's helper names, so values written for its chart (e.g. a ServiceAccount annotation
`{{ include "external-dns.fullname" . }}`) render here too. */}}
{{- define "external-dns.name" -}}{{ include "extdns.name" . }}{{- end }}
{{- define "external-dns.fullname" -}}{{ include "extdns.fullname" . }}{{- end }}
{{- define "external-dns.namespace" -}}{{ include "extdns.namespace" . }}{{- end }}
{{- define "external-dns.chart" -}}{{ include "extdns.chart" . }}{{- end }}
{{- define "external-dns.labels" -}}{{ include "extdns.labels" . }}{{- end }}
{{- define "external-dns.selectorLabels" -}}{{ include "extdns.selectorLabels" . }}{{- end }}
{{- define "external-dns.serviceAccountName" -}}{{ include "extdns.serviceAccountName" . }}{{- end }}
{{- define "external-dns.image" -}}{{ include "extdns.image" . }}{{- end }}

{{/* extdns only: the Secret the built-in DNS server's DNSSEC keys are kept in (`dnsServer.dnssec.secret`). */}}
{{- define "extdns.dnssecSecret" -}}
{{- .Values.dnsServer.dnssec.secret | default (printf "%s-dnssec-keys" (include "extdns.fullname" .)) -}}
{{- end }}
