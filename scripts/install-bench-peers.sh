#!/usr/bin/env bash
# install-bench-peers.sh: installs the peers the parallel-download bench suite measures modelsync against, aria2c
# (Debian's aria2, 1.36) and rclone (Debian's rclone, 1.60), with apt-get, each only when its command is missing.
# Idempotent and quiet: prints one line when it installs something, nothing otherwise. Needs root (or sudo).
set -euo pipefail

packages=()
command -v aria2c >/dev/null 2>&1 || packages+=(aria2)
command -v rclone >/dev/null 2>&1 || packages+=(rclone)
[ "${#packages[@]}" -eq 0 ] && exit 0

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
install() { "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; }

echo "install-bench-peers: installing ${packages[*]}"
# A clean machine may have no package lists yet: update them only when the install cannot go without.
if ! install 2>/dev/null; then
  "${sudo[@]}" apt-get update -qq >/dev/null
  install
fi
command -v aria2c >/dev/null && command -v rclone >/dev/null
