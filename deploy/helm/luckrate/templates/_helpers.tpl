{{- define "luckrate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name; the headless Service appends "-headless", so 54 characters leave room. */}}
{{- define "luckrate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 54 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 54 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 54 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "luckrate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "luckrate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "luckrate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "luckrate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "luckrate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "luckrate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "luckrate.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "luckrate.fullname" .)) .Values.tls.existingSecret }}
{{- end }}

{{- define "luckrate.bearerSecretName" -}}
{{- default (printf "%s-bearer" (include "luckrate.fullname" .)) .Values.bearerToken.existingSecret }}
{{- end }}

{{- define "luckrate.specConfigMapName" -}}
{{- default (include "luckrate.fullname" .) .Values.spec.existingConfigMap }}
{{- end }}

{{/* Paths inside the container. */}}
{{- define "luckrate.dataDir" -}}/var/lib/luckrate{{- end }}
{{- define "luckrate.tlsDir" -}}/etc/luckrate-tls{{- end }}
{{- define "luckrate.bearerDir" -}}/etc/luckrate-bearer{{- end }}

{{/*
luckrate.toml: .Values.config plus the keys the chart owns. Values files hold every number as a float, and
luckrate refuses a float where it wants an integer, so whole numbers are written as integers (a float key
takes an integer too).
*/}}
{{- define "luckrate.configToml" -}}
{{- $owned := list "spec" "grpc" "http" "prometheus" "wal_dir" "wal_max_bytes" "tls_cert" "tls_key" "tls_client_ca" "bearer_token_file" }}
{{- range $key := $owned }}
{{- if hasKey $.Values.config $key }}
{{- fail (printf "config.%s: the chart sets this key; use %s instead" $key (get (dict "spec" "spec.fileName / spec.content" "grpc" "ports.otlpGrpc" "http" "ports.otlpHttp" "prometheus" "ports.metrics" "wal_dir" "wal.enabled" "wal_max_bytes" "wal.maxBytes" "tls_cert" "tls.*" "tls_key" "tls.*" "tls_client_ca" "tls.clientAuth" "bearer_token_file" "bearerToken.*") $key)) }}
{{- end }}
{{- end }}
{{- $cfg := dict }}
{{- range $key, $value := .Values.config }}
{{- if not (kindIs "invalid" $value) }}
{{- $_ := set $cfg $key $value }}
{{- end }}
{{- end }}
{{- $_ := set $cfg "spec" (printf "/etc/luckrate/%s" .Values.spec.fileName) }}
{{- $_ := set $cfg "grpc" (printf "0.0.0.0:%d" (int .Values.ports.otlpGrpc)) }}
{{- $_ := set $cfg "http" (printf "0.0.0.0:%d" (int .Values.ports.otlpHttp)) }}
{{- $_ := set $cfg "prometheus" (printf "0.0.0.0:%d" (int .Values.ports.metrics)) }}
{{- if .Values.wal.enabled }}
{{- $_ := set $cfg "wal_dir" (printf "%s/wal" (include "luckrate.dataDir" .)) }}
{{- $_ := set $cfg "wal_max_bytes" .Values.wal.maxBytes }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- $_ := set $cfg "tls_cert" (printf "%s/tls.crt" (include "luckrate.tlsDir" .)) }}
{{- $_ := set $cfg "tls_key" (printf "%s/tls.key" (include "luckrate.tlsDir" .)) }}
{{- if .Values.tls.clientAuth }}
{{- $_ := set $cfg "tls_client_ca" (printf "%s/ca.crt" (include "luckrate.tlsDir" .)) }}
{{- end }}
{{- end }}
{{- if .Values.bearerToken.enabled }}
{{- $_ := set $cfg "bearer_token_file" (printf "%s/%s" (include "luckrate.bearerDir" .) .Values.bearerToken.secretKey) }}
{{- end -}}
# luckrate serve --config: every key is documented in docs/serve.md (Options).
{{- range $key := keys $cfg | sortAlpha }}
{{- $value := get $cfg $key }}
{{ $key }} = {{ include "luckrate.tomlValue" (dict "key" $key "value" $value) }}
{{- end }}
{{- end }}

{{- define "luckrate.tomlValue" -}}
{{- $v := .value }}
{{- if kindIs "bool" $v }}{{ $v }}
{{- else if kindIs "string" $v }}{{ toJson $v }}
{{- else if or (kindIs "float64" $v) (kindIs "int64" $v) (kindIs "int" $v) }}
{{- if eq (float64 $v) (floor $v) }}{{ int64 $v }}{{ else }}{{ $v }}{{ end }}
{{- else }}{{ fail (printf "config.%s: expected a string, number or true/false, got %s" .key (kindOf $v)) }}
{{- end }}
{{- end }}

{{/* Probe handlers: see probes in values.yaml. */}}
{{- define "luckrate.probeHandler" -}}
{{- $root := .root }}
{{- if and $root.Values.tls.enabled $root.Values.tls.clientAuth }}
tcpSocket:
  port: otlp-grpc
{{- else if eq .probe "liveness" }}
{{- if $root.Values.tls.enabled }}
tcpSocket:
  port: otlp-grpc
{{- else }}
grpc:
  port: {{ int $root.Values.ports.otlpGrpc }}
{{- end }}
{{- else }}
httpGet:
  path: {{ ternary "/healthz" "/readyz" (eq .probe "startup") }}
  port: otlp-http
  scheme: {{ ternary "HTTPS" "HTTP" $root.Values.tls.enabled }}
{{- end }}
{{- end }}
