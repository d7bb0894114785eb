# go-built-once.sh: sourced by the install-*.sh scripts that build a pinned Go tool once per machine.
#
# built_once <name> <version> <cache-dir> <binary-name> <build-function> [<other-output>...]
# Prints <cache-dir>/<version>/<binary-name>, building it first when it is not there: <build-function> <tmp-dir>
# must leave the binary at <tmp-dir>/<binary-name> (and each other output, a file or dir, beside it). The build runs
# under flock(<cache-dir>/<version>.lock), into a temp dir whose outputs are renamed into place once built, the
# binary last, so concurrent callers build once: a second one waits, then finds the binary and what came with it.
built_once() {
  local name=$1 version=$2 cache=$3 binary=$4 build=$5
  shift 5
  local bin=$cache/$version/$binary
  if [ -x "$bin" ]; then
    echo "$bin"
    return 0
  fi
  mkdir -p "$cache"
  exec 9>"$cache/$version.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    command -v go >/dev/null || {
      echo "[$name] building $name $version needs Go on PATH (https://go.dev/dl/), or a $name $version at $bin" >&2
      return 1
    }
    echo "[$name] building $name $version from the Go module proxy into $cache/$version (once per machine)" >&2
    local started=$SECONDS tmp
    tmp=$(mktemp -d "$cache/$version.tmp.XXXXXX")
    # shellcheck disable=SC2064 # the temp dir is known now
    trap "chmod -R u+w '$tmp' 2>/dev/null; rm -rf '$tmp'" EXIT
    "$build" "$tmp"
    mkdir -p "$cache/$version"
    local other
    for other in "$@"; do
      rm -rf "${cache:?}/$version/$other"
      mv -f "$tmp/$other" "$cache/$version/$other"
    done
    mv -f "$tmp/$binary" "$bin"
    echo "[$name] built in $((SECONDS - started)) s: $bin" >&2
  fi
  echo "$bin"
}
