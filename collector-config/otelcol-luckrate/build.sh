#!/usr/bin/env bash
# Build the OpenTelemetry Collector that luckrate's tests run (tests/collector/), from the Go sources
# beside this script: ./otelcol-luckrate. Make-style: does nothing when the binary is newer than
# every input. Needs Go (PATH, or /usr/local/go/bin) and the Go module proxy; the module versions are
# pinned by go.mod and go.sum, which builder generated from manifest.yaml (see that file).
set -euo pipefail
cd "$(dirname "$0")"

BIN=otelcol-luckrate
INPUTS=(build.sh manifest.yaml go.mod go.sum main.go main_others.go components.go)
if [[ -x $BIN && -z $(find "${INPUTS[@]}" -newer "$BIN") ]]; then
  echo "$BIN is up to date"
  exit 0
fi

GO=$(command -v go || true)
GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || { echo "build.sh: no Go toolchain (looked on PATH and at /usr/local/go/bin/go)" >&2; exit 1; }

start=$SECONDS
# Static, stripped, no local paths: the binary is about half the size of a default build.
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags "-s -w" -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
echo "built $(pwd)/$BIN ($(du -h "$BIN" | cut -f1)) in $((SECONDS - start)) s"
