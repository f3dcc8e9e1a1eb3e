#!/usr/bin/env bash
# Prepares what hookwire's tests need, idempotently:
# - the official AGENT-HOOKS conformance vectors (pinned wheel, hash-checked),
#   into .cache/;
# - the approval web test: Debian's chromium (installed when root) and
#   `npm ci` of playwright-core in tests/web.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/fetch-ctk-vectors.sh ]; then
  scripts/fetch-ctk-vectors.sh
fi

# --- Approval web test: a real headless Chromium ---------------------------
# tests/approval_web.rs drives the approval page in Debian's chromium through
# playwright-core (which never downloads a browser of its own), npm-installed
# into tests/web from its package-lock.json.
if [ -z "${CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || {
      echo "setup: apt-get install chromium failed" >&2
      exit 1
    }
    echo "setup: installed chromium"
  else
    echo "setup: warning: /usr/bin/chromium is missing and apt-get cannot run here (not root?);" \
      "tests/approval_web.rs will fail until Chromium is installed (apt-get install chromium)" >&2
  fi
fi
command -v npm >/dev/null 2>&1 || { echo "setup: node and npm are required for tests/web" >&2; exit 1; }
WEB_DIR="tests/web"
WEB_STAMP="${WEB_DIR}/node_modules/.hookwire-lock-sha256"
WEB_LOCK_SHA="$(sha256sum "${WEB_DIR}/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "${WEB_STAMP}" ] || [ "$(cat "${WEB_STAMP}")" != "${WEB_LOCK_SHA}" ]; then
  (cd "${WEB_DIR}" && npm ci --no-audit --no-fund --loglevel=error) || {
    echo "setup: npm ci in ${WEB_DIR} failed (is the npm registry reachable?)" >&2
    exit 1
  }
  echo "${WEB_LOCK_SHA}" >"${WEB_STAMP}"
  echo "setup: npm ci in ${WEB_DIR}"
fi
