#!/usr/bin/env bash
# Installs the LiteLLM proxy the load bench's `gateway_peer` section
# measures hookwire's gateway against: `litellm[proxy]` at one exact
# version, into its own venv (.cache/litellm-venv), idempotently (stamped
# with the version: skipped when that version is already in place). Not
# part of scripts/setup.sh: only the bench needs it, and it calls this.
#
# Prints the venv's `litellm` command on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

# The exact release measured: the newest whose `proxy` extra resolves on
# PyPI when the section was written (1.108.8 and later require a
# `litellm-proxy` distribution PyPI does not serve). Changing it reinstalls.
LITELLM_VERSION="1.108.7"
VENV=".cache/litellm-venv"
STAMP="${VENV}/.hookwire-litellm-version"

usage() {
  cat <<EOF
usage: scripts/litellm.sh [--help]

Installs litellm[proxy]==${LITELLM_VERSION} into ${VENV} (once; a second
run with the same version does nothing) and prints the path of its
\`litellm\` command. Set PYTHON to use another interpreter (3.9 or newer).

Example:
  scripts/litellm.sh
  .cache/litellm-venv/bin/litellm --config litellm.yaml --port 4000 --num_workers 2

The load bench runs it itself:
  cargo bench -p hookwire-bench --bench load -- --only gateway_peer
EOF
}

die() {
  echo "litellm: $*" >&2
  exit 1
}

case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  "") ;;
  *)
    usage >&2
    exit 2
    ;;
esac

PY="${PYTHON:-python3}"
command -v "${PY}" >/dev/null 2>&1 || die "python3 is required (set PYTHON to use another interpreter)"
if [ ! -x "${VENV}/bin/python" ]; then
  "${PY}" -m venv "${VENV}" || die "could not create a venv in ${VENV}"
fi
# The installed version read from its metadata (importing the proxy takes
# seconds; that is done once, after installing).
installed() {
  "${VENV}/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null
}
if [ ! -f "${STAMP}" ] || [ "$(cat "${STAMP}")" != "${LITELLM_VERSION}" ] ||
  [ "$(installed)" != "${LITELLM_VERSION}" ]; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check \
    "litellm[proxy]==${LITELLM_VERSION}" ||
    die "pip install litellm[proxy]==${LITELLM_VERSION} failed (is PyPI reachable?)"
  "${VENV}/bin/python" -c 'import litellm.proxy.proxy_server' >/dev/null 2>&1 ||
    die "litellm[proxy]==${LITELLM_VERSION} installed but its proxy does not import"
  echo "${LITELLM_VERSION}" >"${STAMP}"
  echo "litellm: installed litellm[proxy]==${LITELLM_VERSION} into ${VENV}" >&2
fi
[ -x "${VENV}/bin/litellm" ] || die "${VENV}/bin/litellm is missing"
echo "$(pwd)/${VENV}/bin/litellm"
