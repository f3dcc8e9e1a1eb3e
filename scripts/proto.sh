#!/usr/bin/env bash
# Checks the wire contract in proto/ with buf: lint, and breaking changes
# against the released contract (proto/released/). Installs the pinned buf
# CLI from the npm registry into scripts/buf/node_modules on first use.
set -euo pipefail
cd "$(dirname "$0")/.."

RELEASED="proto/released/hookwire-v1.json"
usage() {
  cat <<'TXT'
usage: scripts/proto.sh [check|release|--help]

  check    (default) buf lint proto/, then buf breaking against the
           released contract in proto/released/hookwire-v1.json
           (FILE rules: wire, JSON and generated-code compatibility)
  release  record today's proto/ as the released contract (when a
           version ships); later changes are checked against it

The compatibility policy is at the top of proto/hookwire/v1/interceptor.proto.
After editing a .proto, regenerate the checked-in Rust code:
  cargo run -p hookwire-codegen

example:
  scripts/proto.sh check
TXT
}

command_=${1:-check}
case "${command_}" in
  -h | --help) usage; exit 0 ;;
  check | release) ;;
  *) echo "proto.sh: unknown command '${command_}'" >&2; usage >&2; exit 2 ;;
esac

TOOLS="scripts/buf"
STAMP="${TOOLS}/node_modules/.hookwire-lock-sha256"
LOCK_SHA="$(sha256sum "${TOOLS}/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "${STAMP}" ] || [ "$(cat "${STAMP}")" != "${LOCK_SHA}" ]; then
  command -v npm >/dev/null 2>&1 || { echo "proto.sh: node and npm are required for buf" >&2; exit 1; }
  (cd "${TOOLS}" && npm ci --no-audit --no-fund --loglevel=error) || {
    echo "proto.sh: npm ci in ${TOOLS} failed (is the npm registry reachable?)" >&2
    exit 1
  }
  echo "${LOCK_SHA}" >"${STAMP}"
fi
BUF="$(pwd)/${TOOLS}/node_modules/.bin/buf"
# buf keeps a cache; keep it inside the project's cache, not in $HOME.
export BUF_CACHE_DIR="$(pwd)/.cache/buf"

cd proto
case "${command_}" in
  check)
    "${BUF}" lint
    "${BUF}" breaking --against "../${RELEASED}"
    echo "proto: buf lint and breaking (against ${RELEASED}) passed"
    ;;
  release)
    "${BUF}" build --exclude-source-info -o "../${RELEASED}"
    echo "proto: recorded the released contract in ${RELEASED}"
    ;;
esac
