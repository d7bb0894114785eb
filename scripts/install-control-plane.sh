#!/usr/bin/env bash
# install-control-plane.sh [cache-dir]   (default: ${XDG_CACHE_HOME:-~/.cache}/modelsync/control-plane)
#
# Builds the real Kubernetes control plane the e2e tests run (test/control-plane/), from the Go module proxy only,
# once per machine, into <cache-dir>/<piece>/<version>/, outside the clone:
#   kube-apiserver and kubectl   v1.35.4  through a wrapper module (k8s.io/kubernetes' own module zip has no
#                                         staging/ tree: its 31 replace lines point at the published v0.35.4 ones)
#   etcd                         v3.6.16  through a wrapper module (its go.mod's `replace ../api` lines refuse
#                                         `go install`; Kubernetes 1.35 wants etcd >= 3.6.6)
#   KServe's manager             v0.19.0  the module copied out and built as the main module, with its config/
#                                         (CRDs, inferenceservice-config, webhooks) kept beside the binary
# Prints one line per piece: `<piece> <path>`. A cold build is ~14 CPU-minutes and ~635 MiB of module downloads
# here (Go's own caches keep them); after that it is four file tests. Needs Go >= 1.25. Safe to run concurrently
# (scripts/go-built-once.sh). What the tests run them for: docs/operating.md, "Config sources".
set -euo pipefail

kube_version=v1.35.4
staging_version=v0.35.4
etcd_version=v3.6.16
kserve_version=v0.19.0
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/modelsync/control-plane}

# A module in <dir> that requires k8s.io/kubernetes with every staging module replaced by its published version.
kube_wrapper() {
  local dir=$1 gomod
  (cd "$dir" && go mod init modelsync.local/kube >/dev/null 2>&1)
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || {
    echo "[control-plane] the module proxy gave no go.mod for k8s.io/kubernetes@$kube_version" >&2
    return 1
  }
  local replaces
  replaces=$(sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#-replace=\1=\1@'"$staging_version"'#p' "$gomod")
  [ -n "$replaces" ] || {
    echo "[control-plane] no staging replace lines in $gomod" >&2
    return 1
  }
  # shellcheck disable=SC2086 # one -replace per word
  (cd "$dir" && go mod edit -require="k8s.io/kubernetes@$kube_version" $replaces)
  cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  (cd "$dir" && go mod tidy -e >/dev/null 2>&1)
}

# Builds k8s.io/kubernetes/cmd/<what> into <dir>/<what>, stamped with its version (else clients see v0.0.0).
kube_build() {
  local dir=$1 what=$2 minor=${kube_version#v1.}
  minor=${minor%%.*}
  local stamp=''
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    stamp="$stamp -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  done
  kube_wrapper "$dir"
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w$stamp" -o "$dir/$what" "k8s.io/kubernetes/cmd/$what")
}
build_apiserver() { kube_build "$1" kube-apiserver; }
build_kubectl() { kube_build "$1" kubectl; }

build_etcd() {
  (cd "$1" && go mod init modelsync.local/etcd >/dev/null 2>&1 &&
    go get "go.etcd.io/etcd/server/v3@$etcd_version" >/dev/null 2>&1 &&
    CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$1/etcd" go.etcd.io/etcd/server/v3)
}

build_manager() {
  (cd "$1" && go mod init modelsync.local/kserve >/dev/null 2>&1)
  local dir
  dir=$(cd "$1" && go mod download -json "github.com/kserve/kserve@$kserve_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir/cmd/manager" ] && [ -d "$dir/config/crd" ] || {
    echo "[control-plane] the module proxy gave no cmd/manager or config/ for kserve@$kserve_version (at '$dir')" >&2
    return 1
  }
  cp -r "$dir" "$1/src"
  chmod -R u+w "$1/src"
  (cd "$1/src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$1/manager" ./cmd/manager)
  mv "$1/src/config" "$1/config"
}

# shellcheck source=go-built-once.sh
. "$(dirname "$0")/go-built-once.sh"
# Each in a subshell: built_once holds its lock on fd 9 and sets an EXIT trap for its temp dir.
echo "etcd $(built_once etcd "$etcd_version" "$cache/etcd" etcd build_etcd)"
echo "kube-apiserver $(built_once kube-apiserver "$kube_version" "$cache/kube-apiserver" kube-apiserver build_apiserver)"
echo "kubectl $(built_once kubectl "$kube_version" "$cache/kubectl" kubectl build_kubectl)"
echo "kserve-manager $(built_once kserve-manager "$kserve_version" "$cache/kserve-manager" manager build_manager config)"
