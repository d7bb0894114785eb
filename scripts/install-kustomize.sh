#!/usr/bin/env bash
# install-kustomize.sh [cache-dir]   (default: ${XDG_CACHE_HOME:-~/.cache}/modelsync/kustomize)
#
# Prints the path of the kustomize the tests render deploy/ with (test/deploy/kustomize.ts), building it first
# when it is not yet there: `go install` of the pinned module from the Go module proxy into
# <cache-dir>/<version>/kustomize, outside the clone so that every clone of the machine builds it once.
# The first build takes 1.5-3 minutes and 50 CPU-seconds (Go's own module and build caches keep ~300 MB);
# after that it is a file test. Needs Go >= 1.24 (what v5.8.1's go.mod asks: v5.8.2 wants 1.26, v5.8.3 1.27).
#
# Safe to run concurrently: the build runs under flock(<cache-dir>/<version>.lock), into a temp dir renamed into
# place once `kustomize version` answers the pinned version; a second process waits, then finds the binary.
set -euo pipefail

version=v5.8.1
module=sigs.k8s.io/kustomize/kustomize/v5

log() { echo "[kustomize] $*" >&2; }

cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/modelsync/kustomize}
bin=$cache/$version/kustomize
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/$version.lock"
flock 9
if [ ! -x "$bin" ]; then
  command -v go >/dev/null || {
    log "building kustomize $version needs Go >= 1.24 on PATH (https://go.dev/dl/), or a kustomize $version at $bin"
    exit 1
  }
  log "building kustomize $version from the Go module proxy into $cache/$version (once per machine: 1.5-3 minutes)"
  started=$SECONDS
  tmp=$(mktemp -d "$cache/$version.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  GOBIN=$tmp CGO_ENABLED=0 go install -trimpath -ldflags '-s -w' "$module@$version"
  built=$("$tmp/kustomize" version)
  [ "$built" = "$version" ] || {
    log "the build answers 'kustomize version' with '$built', not $version"
    exit 1
  }
  mkdir -p "$cache/$version"
  mv -f "$tmp/kustomize" "$bin"
  log "built in $((SECONDS - started)) s: $bin"
fi
echo "$bin"
