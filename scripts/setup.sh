#!/usr/bin/env bash
# Installs what building and testing isolane needs on a fresh Debian 12 machine, and nothing that
# is already there, so a second run costs a few dpkg queries.
#   1. Debian packages (apt-get, only the missing ones).
#   2. V8: Debian's libnode108 + libnode-dev (Node 18.20, V8 10.2). They conflict with the installed
#      Node 20 package, so we never apt-install them: `apt-get download` fetches the two .debs (apt
#      checks them against the signed archive) and `dpkg -x` unpacks them into build/deps/libnode.
#      Never use /usr/include/node: those are Node 20's V8 11.3 headers.
#   3. npm packages pinned by package-lock.json (`npm ci`), when the lockfile changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  cmake ninja-build g++ ccache pkg-config
  libboost1.74-dev libssl-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev libflatbuffers-dev flatbuffers-compiler libgtest-dev libgmock-dev
  libbenchmark-dev clang libclang-rt-14-dev
  clang-format clang-tidy openssl
  libuv1 libicu72 libc-ares2 libnghttp2-14 libbrotli1 libssl3 zlib1g
  nodejs npm
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

LIBNODE_VERSION_WANTED="18."
LIBNODE_DIR="$BUILD_DIR/deps/libnode"
if [ ! -f "$LIBNODE_DIR/.unpacked" ]; then
  echo "setup: fetching V8 (Debian libnode108 + libnode-dev) into $LIBNODE_DIR"
  tmp="$(mktemp -d)"
  chmod 755 "$tmp"   # so apt's sandbox user may write the download
  ( cd "$tmp" && { apt-get download libnode108 libnode-dev >/dev/null 2>&1 ||
      { $SUDO apt-get update -qq && apt-get download libnode108 libnode-dev; }; } )
  rm -rf "$LIBNODE_DIR" && mkdir -p "$LIBNODE_DIR"
  for deb in "$tmp"/libnode108_*.deb "$tmp"/libnode-dev_*.deb; do dpkg -x "$deb" "$LIBNODE_DIR"; done
  version="$(basename "$tmp"/libnode108_*.deb | cut -d_ -f2)"
  rm -rf "$tmp"
  case "$version" in
    "$LIBNODE_VERSION_WANTED"*) ;;
    *) echo "setup: expected libnode108 $LIBNODE_VERSION_WANTED*, got $version" >&2; exit 1 ;;
  esac
  echo "$version" > "$LIBNODE_DIR/.unpacked"
fi

# npm ci only when the lockfile is newer than what node_modules was installed from.
if [ ! -f "$ROOT/node_modules/.package-lock.json" ] ||
   [ "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]; then
  echo "setup: installing npm packages (npm ci)"
  ( cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error )
fi
