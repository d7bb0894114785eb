#!/usr/bin/env bash
# install-kserve-agent.sh [cache-dir]   (default: ${XDG_CACHE_HOME:-~/.cache}/modelsync/kserve-agent)
#
# Prints the path of the real KServe Go agent (`cmd/agent` of github.com/kserve/kserve) that `npm run bench` runs
# beside modelsync (bench/kserve-agent.ts), building it first when it is not yet there: the module's zip from the
# Go module proxy, copied out and built as the main module (so that its own replace lines are honoured), into
# <cache-dir>/<version>/agent, outside the clone so that every clone of the machine builds it once.
# The first build takes about 2 minutes and 4 CPU-minutes here (Go's module and build caches keep ~1 GB); after
# that it is a file test. Needs Go >= 1.25 (what v0.19.0's go.mod asks).
#
# Safe to run concurrently: the build runs under flock(<cache-dir>/<version>.lock), into a temp dir renamed into
# place once built; a second process waits, then finds the binary.
set -euo pipefail

version=v0.19.0
module=github.com/kserve/kserve

log() { echo "[kserve-agent] $*" >&2; }

cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/modelsync/kserve-agent}
bin=$cache/$version/agent
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/$version.lock"
flock 9
if [ ! -x "$bin" ]; then
  command -v go >/dev/null || {
    log "building the KServe agent $version needs Go >= 1.25 on PATH (https://go.dev/dl/), or an agent at $bin"
    exit 1
  }
  log "building the KServe agent $version from the Go module proxy into $cache/$version (once per machine: ~2 minutes)"
  started=$SECONDS
  tmp=$(mktemp -d "$cache/$version.tmp.XXXXXX")
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  # `go mod download` needs a module to run in; an empty one will do.
  (cd "$tmp" && go mod init modelsync.local/kserve-agent >/dev/null 2>&1)
  dir=$(cd "$tmp" && go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/cmd/agent" ] || {
    log "the module proxy gave no cmd/agent for $module@$version (at '$dir')"
    exit 1
  }
  cp -r "$dir" "$tmp/src"
  chmod -R u+w "$tmp/src"
  (cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$tmp/agent" ./cmd/agent)
  mkdir -p "$cache/$version"
  mv -f "$tmp/agent" "$bin"
  log "built in $((SECONDS - started)) s: $bin"
fi
echo "$bin"
