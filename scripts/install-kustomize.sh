#!/usr/bin/env bash
# install-kustomize.sh [cache-dir]   (default: ${XDG_CACHE_HOME:-~/.cache}/modelsync/kustomize)
#
# Prints the path of the kustomize the tests render deploy/ with (test/deploy/kustomize.ts), building it first
# when it is not yet there: `go install` of the pinned module from the Go module proxy into
# <cache-dir>/<version>/kustomize, outside the clone so that every clone of the machine builds it once.
# The first build takes 1.5-3 minutes and 50 CPU-seconds (Go's own module and build caches keep ~300 MB);
# after that it is a file test. Needs Go >= 1.24 (what v5.8.1's go.mod asks: v5.8.2 wants 1.26, v5.8.3 1.27).
# Safe to run concurrently (scripts/go-built-once.sh).
set -euo pipefail

version=v5.8.1
module=sigs.k8s.io/kustomize/kustomize/v5

build() {
  GOBIN=$1 CGO_ENABLED=0 go install -trimpath -ldflags '-s -w' "$module@$version"
  local built
  built=$("$1/kustomize" version)
  [ "$built" = "$version" ] || {
    echo "[kustomize] the build answers 'kustomize version' with '$built', not $version" >&2
    return 1
  }
}

# shellcheck source=go-built-once.sh
. "$(dirname "$0")/go-built-once.sh"
built_once kustomize "$version" "${1:-${XDG_CACHE_HOME:-$HOME/.cache}/modelsync/kustomize}" kustomize build
