#!/usr/bin/env bash
# Regenerate the vendored CRD schemas in ./schemas/ (committed; kubeconform reads them offline): the
# ServiceMonitor and PrometheusRule CRDs of the Prometheus Operator at OPERATOR_VERSION, converted by
# kubeconform's own CRD converter (scripts/openapi2jsonschema.py at KUBECONFORM_VERSION, as build.sh pins).
# Strict at every level, the root included. Needs Go, the Go module proxy, and a Python with PyYAML
# (PYTHON, default python3; the project's .venv has it).
set -euo pipefail
cd "$(dirname "$0")"

OPERATOR_VERSION=v0.85.0
KUBECONFORM_VERSION=v0.7.0
PYTHON=${PYTHON:-python3}
GO=$(command -v go || true)
GO=${GO:-/usr/local/go/bin/go}

module_dir() { "$GO" mod download -json "$1" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'; }
operator=$(module_dir "github.com/prometheus-operator/prometheus-operator@$OPERATOR_VERSION")
converter=$(module_dir "github.com/yannh/kubeconform@$KUBECONFORM_VERSION")/scripts/openapi2jsonschema.py

out=$(pwd)/schemas
mkdir -p "$out"
cd "$out"
# kubeconform looks a kind up as {{ .ResourceKind }}{{ .KindSuffix }}.json: servicemonitor-monitoring-v1.json
for crd in servicemonitors prometheusrules; do
  DENY_ROOT_ADDITIONAL_PROPERTIES=1 FILENAME_FORMAT='{kind}-{group}-{version}' \
    "$PYTHON" "$converter" "$operator/example/prometheus-operator-crd/monitoring.coreos.com_$crd.yaml"
done
