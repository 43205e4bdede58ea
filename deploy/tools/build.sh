#!/usr/bin/env bash
# Build what checks the deployment files (tests/deploy/test_helm.py, test_compose.py), into ./bin beside this
# script (.gitignore covers it), all from Go modules:
#   bin/helm, bin/kubeconform  at the versions pinned below (go install);
#   bin/docker-compose         the Compose CLI, from the module in ./compose (go.mod, go.sum pin it);
#   bin/schemas/               kubeconform's JSON schemas for the Kubernetes kinds the chart and deploy/k8s use,
#                              from the OpenAPI document in Kubernetes' own module (k8s.io/kubernetes) at
#                              K8S_VERSION, by openapi2jsonschema.py. The CRD schemas (ServiceMonitor,
#                              PrometheusRule) are vendored in ./schemas instead (crd-schemas.sh).
# Make-style: does nothing for an output newer than its inputs (this script holds the versions). Needs Go (PATH,
# or /usr/local/go/bin), the Go module proxy and python3.
set -euo pipefail
cd "$(dirname "$0")"

TOOLS=(
  # name  main package  version
  "helm helm.sh/helm/v3/cmd/helm v3.22.0"
  "kubeconform github.com/yannh/kubeconform/cmd/kubeconform v0.7.0"
)
COMPOSE_VERSION=v5.6.0  # as compose/go.mod requires
# The Kubernetes release whose API the manifests are validated against; helm v3.22.0's client-go is v0.37.
K8S_VERSION=v1.37.2
IFS=. read -r K8S_MAJOR K8S_MINOR _ <<<"${K8S_VERSION#v}"
KINDS=(Namespace ConfigMap Secret Service ServiceAccount Deployment StatefulSet PodDisruptionBudget Role RoleBinding)

GO=$(command -v go || true)
GO=${GO:-/usr/local/go/bin/go}
need_go() { [[ -x $GO ]] || { echo "build.sh: no Go toolchain (looked on PATH and at /usr/local/go/bin/go)" >&2; exit 1; }; }
up_to_date() { local out=$1; shift; [[ -e $out && -z $(find build.sh "$@" -newer "$out") ]]; }

mkdir -p bin
for tool in "${TOOLS[@]}"; do
  read -r name package version <<<"$tool"
  if up_to_date "bin/$name"; then
    echo "$name is up to date"
    continue
  fi
  need_go
  start=$SECONDS
  # Static, stripped, no local paths. For helm, what its release build (Makefile LDFLAGS) sets: its version,
  # and the Kubernetes version `helm template` and `helm lint` assume without a cluster (1.20 unless set).
  ldflags="-s -w"
  if [[ $name == helm ]]; then
    ldflags+=" -X helm.sh/helm/v3/internal/version.version=$version"
    for pkg in pkg/chartutil pkg/lint/rules; do
      ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=$K8S_MAJOR -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$K8S_MINOR"
    done
  fi
  CGO_ENABLED=0 GOBIN="$(pwd)/bin" "$GO" install -trimpath -ldflags "$ldflags" "$package@$version"
  touch "bin/$name"
  echo "built $(pwd)/bin/$name $version ($(du -h "bin/$name" | cut -f1)) in $((SECONDS - start)) s"
done

if up_to_date bin/docker-compose compose/go.mod compose/go.sum compose/tools.go; then
  echo "docker-compose is up to date"
else
  need_go
  start=$SECONDS
  (cd compose && CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" \
    -o ../bin/docker-compose github.com/docker/compose/v5/cmd)
  echo "built $(pwd)/bin/docker-compose $COMPOSE_VERSION ($(du -h bin/docker-compose | cut -f1)) in $((SECONDS - start)) s"
fi

stamp=bin/schemas/.k8s-$K8S_VERSION
if up_to_date "$stamp" openapi2jsonschema.py; then
  echo "schemas for Kubernetes $K8S_VERSION are up to date"
  exit 0
fi
need_go
module=$("$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
rm -rf bin/schemas
python3 openapi2jsonschema.py "$module/api/openapi-spec/swagger.json" bin/schemas "${KINDS[@]}"
touch "$stamp"
echo "wrote ${#KINDS[@]} kinds' schemas for Kubernetes $K8S_VERSION into $(pwd)/bin/schemas"
