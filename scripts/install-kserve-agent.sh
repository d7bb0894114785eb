#!/usr/bin/env bash
# install-kserve-agent.sh [cache-dir]   (default: ${XDG_CACHE_HOME:-~/.cache}/modelsync/kserve-agent)
#
# Prints the path of the real KServe Go agent (`cmd/agent` of github.com/kserve/kserve) that `npm run bench` runs
# beside modelsync (bench/kserve-agent.ts), building it first when it is not yet there: the module's zip from the
# Go module proxy, copied out and built as the main module (so that its own replace lines are honoured), into
# <cache-dir>/<version>/agent, outside the clone so that every clone of the machine builds it once.
# The first build takes about 2 minutes and 4 CPU-minutes here (Go's module and build caches keep ~1 GB); after
# that it is a file test. Needs Go >= 1.25 (what v0.19.0's go.mod asks). Safe to run concurrently
# (scripts/go-built-once.sh).
set -euo pipefail

version=v0.19.0
module=github.com/kserve/kserve

build() {
  # `go mod download` needs a module to run in; an empty one will do.
  (cd "$1" && go mod init modelsync.local/kserve-agent >/dev/null 2>&1)
  local dir
  dir=$(cd "$1" && go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/cmd/agent" ] || {
    echo "[kserve-agent] the module proxy gave no cmd/agent for $module@$version (at '$dir')" >&2
    return 1
  }
  cp -r "$dir" "$1/src"
  chmod -R u+w "$1/src"
  (cd "$1/src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$1/agent" ./cmd/agent)
}

# shellcheck source=go-built-once.sh
. "$(dirname "$0")/go-built-once.sh"
built_once kserve-agent "$version" "${1:-${XDG_CACHE_HOME:-$HOME/.cache}/modelsync/kserve-agent}" agent build
