#!/usr/bin/env bash
# install.sh <cache-dir> [triton|mlserver|kserve ...]   (no server named: all three)
#
# Installs the real model servers the e2e tests run, one virtualenv per server (their pins conflict):
#   <cache-dir>/triton/venv     nvidia-pytriton 0.7.0 (its bundled tritonserver 2.51.0 = container 24.10) + numpy<2
#   <cache-dir>/mlserver/venv   mlserver 1.7.1 + mlserver-sklearn 1.7.1 (+ uvloop 0.21.0, see requirements/)
#   <cache-dir>/kserve/venv     kserve 0.21.0 (run through kserve-server.py beside this script)
# and, per server, <cache-dir>/<server>/paths.json (what test/real-servers/servers.ts reads: the binary, the
# PATH and LD_LIBRARY_PATH entries it needs), env.sh (the same for a shell: `source` it) and freeze.txt.
#
# Versions: requirements/<server>.in (what is asked for) constrained by requirements/<server>.lock.txt (a
# `pip freeze --all` of a good install), so every install resolves to exactly the same set. To re-pin: delete
# the .lock.txt, install, copy <cache-dir>/<server>/freeze.txt over it.
#
# Idempotent and fast when installed: <cache-dir>/<server>/stamp holds the sha256 of SETUP_VERSION, the python,
# the .in and the .lock.txt, written last (through a rename); when it matches, nothing is done. An interrupted
# or failed install leaves no stamp, and the next run deletes the venv and installs it again.
# Safe to run concurrently: each server is installed under flock(<cache-dir>/<server>.lock); a second process
# waits, then finds the stamp.
#
# Exit status: 0 when every named server is installed; 1 when one failed (each failure is named on stderr, the
# others are still installed); 2 for a usage error.
# Env: MODEL_SERVERS_PYTHON (default python3.11; a shared-libpython build: Triton's python backend stub links it).
set -euo pipefail

SETUP_VERSION=1 # bump when the post-install steps below change: every server is then installed again
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
reqdir=$here/requirements
py=${MODEL_SERVERS_PYTHON:-python3.11}

log() { echo "[model-servers] $*" >&2; }

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: $0 <cache-dir> [triton|mlserver|kserve ...]" >&2
  exit 2
fi
cache_arg=$1
shift
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=(triton mlserver kserve)
for s in "${servers[@]}"; do
  case $s in
  triton | mlserver | kserve) ;;
  *)
    log "unknown server '$s' (expected triton, mlserver or kserve)"
    exit 2
    ;;
  esac
done

mkdir -p "$cache_arg"
cache=$(cd "$cache_arg" && pwd)

stamp_of() { # the key of an install: everything that decides what ends up in the venv
  local s=$1
  {
    echo "setup=$SETUP_VERSION python=$py"
    cat "$reqdir/$s.in"
    if [ -f "$reqdir/$s.lock.txt" ]; then cat "$reqdir/$s.lock.txt"; fi
  } | sha256sum | cut -d' ' -f1
}

# paths.json and env.sh of a server: $1 = dir, $2 = venv, $3 = the binary, $4 = LD_LIBRARY_PATH entries (':'),
# then extra "key=value" string fields for paths.json.
write_paths() {
  local dir=$1 venv=$2 bin=$3 ld=$4
  shift 4
  "$venv/bin/python" - "$dir/paths.json.new" "$venv" "$bin" "$ld" "$@" <<'EOF'
import json, sys
out, venv, binary, ld, *extra = sys.argv[1:]
paths = {"venv": venv, "python": f"{venv}/bin/python", "bin": binary, "path": [f"{venv}/bin"],
         "ldLibraryPath": [p for p in ld.split(":") if p]}
paths.update(kv.split("=", 1) for kv in extra)
with open(out, "w") as f:
    json.dump(paths, f, indent=2)
    f.write("\n")
EOF
  mv -f "$dir/paths.json.new" "$dir/paths.json"
  {
    echo "# source me: the environment test/real-servers/servers.ts gives this server (see paths.json)"
    echo "export PATH='$venv/bin':\"\$PATH\""
    if [ -n "$ld" ]; then echo "export LD_LIBRARY_PATH='$ld'\"\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""; fi
    echo "export MODEL_SERVER_BIN='$bin'"
  } >"$dir/env.sh"
}

post_install_triton() { # $1 = server dir, $2 = venv
  local dir=$1 venv=$2 sp libdir pyver tdir
  sp=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  libdir=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')
  pyver=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  tdir=$sp/pytriton/tritonserver
  [ -x "$tdir/bin/tritonserver" ] || {
    log "triton: no $tdir/bin/tritonserver in the nvidia-pytriton wheel"
    return 1
  }
  [ -f "$tdir/python_backend_stubs/$pyver/triton_python_backend_stub" ] || {
    log "triton: the wheel has no python backend stub for python $pyver (set MODEL_SERVERS_PYTHON)"
    return 1
  }
  [ -f "$libdir/libpython$pyver.so.1.0" ] || [ -f "$libdir/libpython$pyver.so" ] || {
    log "triton: $libdir has no libpython$pyver.so: the python backend stub needs a shared-libpython build"
    return 1
  }
  # The backends dir must hold the stub of this interpreter (PyTriton does the same in its workspace). The copy
  # loses the stub's RPATH ($ORIGIN/../../../../nvidia_pytriton.libs), hence LD_LIBRARY_PATH: without it the
  # stub cannot exec and Triton never notices (the load hangs forever).
  rm -rf "$dir/backends"
  cp -a "$tdir/backends" "$dir/backends"
  cp "$tdir/python_backend_stubs/$pyver/triton_python_backend_stub" "$dir/backends/python/"
  chmod +x "$dir/backends/python/triton_python_backend_stub"
  local usage # --help exits 1 after printing the usage: check that it runs (its libraries resolve) by the text
  usage=$("$tdir/bin/tritonserver" --help 2>&1 || true)
  [[ $usage == *--model-repository* ]] || {
    log "triton: $tdir/bin/tritonserver does not run: ${usage:0:400}"
    return 1
  }
  write_paths "$dir" "$venv" "$tdir/bin/tritonserver" "$sp/nvidia_pytriton.libs:$libdir" \
    "backendDirectory=$dir/backends" "version=2.51.0"
}

post_install_mlserver() {
  local dir=$1 venv=$2
  "$venv/bin/python" -c 'import mlserver, mlserver_sklearn, sklearn, joblib' || {
    log "mlserver: the venv cannot import mlserver, mlserver_sklearn, sklearn and joblib"
    return 1
  }
  write_paths "$dir" "$venv" "$venv/bin/mlserver" "" "version=1.7.1"
}

post_install_kserve() {
  local dir=$1 venv=$2
  "$venv/bin/python" -c 'import kserve, numpy' || {
    log "kserve: the venv cannot import kserve and numpy"
    return 1
  }
  # No path of this checkout goes in: the cache is shared by every clone (servers.ts runs kserve-server.py
  # from the clone the tests run in).
  write_paths "$dir" "$venv" "$venv/bin/python" "" "version=0.21.0"
}

install_one() {
  local s=$1 dir=$cache/$1 want
  mkdir -p "$dir"
  want=$(stamp_of "$s")
  (
    flock 9
    have=$(cat "$dir/stamp" 2>/dev/null || true)
    if [ "$have" = "$want" ] && [ -x "$dir/venv/bin/python" ] && [ -f "$dir/paths.json" ]; then
      log "$s: up to date ($dir)"
      exit 0
    fi
    command -v "$py" >/dev/null || {
      log "$s: no '$py' on PATH (set MODEL_SERVERS_PYTHON to a python 3.11 with a shared libpython)"
      exit 1
    }
    t0=$(date +%s.%N)
    log "$s: installing into $dir/venv (${have:+stamp changed; }about a minute; pip's output follows)"
    rm -f "$dir/stamp"
    rm -rf "$dir/venv" "$dir/backends" "$dir/paths.json" "$dir/env.sh"
    "$py" -m venv "$dir/venv"
    cons=()
    if [ -f "$reqdir/$s.lock.txt" ]; then cons=(-c "$reqdir/$s.lock.txt"); fi
    "$dir/venv/bin/pip" install --disable-pip-version-check --no-input --progress-bar off \
      -r "$reqdir/$s.in" "${cons[@]}"
    "$dir/venv/bin/pip" check >&2 || log "$s: pip check reported problems (above)"
    "$dir/venv/bin/pip" freeze --all --exclude-editable >"$dir/freeze.txt"
    "post_install_$s" "$dir" "$dir/venv"
    echo "$want" >"$dir/stamp.new"
    mv -f "$dir/stamp.new" "$dir/stamp"
    log "$s: installed in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s, $(du -sh "$dir/venv" | cut -f1)"
  ) 9>"$cache/$s.lock"
}

failed=()
for s in "${servers[@]}"; do
  # In the background and waited for, so `set -e` holds inside (a function called in `||` runs without it).
  rc=0
  install_one "$s" &
  pid=$!
  trap 'kill -TERM $pid 2>/dev/null; wait $pid; exit 143' TERM
  wait $pid || rc=$?
  trap - TERM
  if [ $rc -ne 0 ]; then
    log "$s: INSTALL FAILED (exit $rc): the lines above say why; run again to retry from scratch"
    failed+=("$s")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
