#!/usr/bin/env bash
# Prepares what hookwire's tests need, idempotently, into .cache/ and the
# example folders only:
# - the official AGENT-HOOKS conformance vectors (pinned wheel, hash-checked);
# - the Python interceptor package and example: a venv in .cache/venv with the
#   exact grpcio / grpcio-tools of examples/python/requirements.txt, the build
#   and test pins of sdks/python/requirements-dev.txt (hatchling, pytest, the
#   official agent-hooks-sdk, Microsoft Agent Framework with its OpenAI chat
#   client) and the `hookwire` package of sdks/python,
#   installed editable (its stubs are checked in); the official `openai` and
#   `anthropic` SDKs of examples/gateway/requirements.txt and the
#   `openai-agents` SDK of tests/gateway-requirements.txt for the gateway's
#   example and tests; the
#   official MCP SDK (`mcp`, its MCPServer ex-FastMCP) of tests/mcp-requirements.txt
#   for the MCP proxy's tests;
# - the TypeScript package: `npm ci` in sdks/typescript (package-lock.json)
#   and its build with the pinned tsc; the Node interceptor example on it:
#   `npm ci` in examples/node (package-lock.json).
# - the approval web test: Debian's chromium (installed when root) and
#   `npm ci` of playwright-core in tests/web.
# - the coding-agent hooks test: `npm ci` of the pinned Claude Code CLI in
#   tests/agents.
# - the MCP proxy's tests: `npm ci` of the official TypeScript MCP SDK in
#   tests/fixtures/mcp/ts (its stdio upstream server).
# - the metrics tests: Debian's prometheus package for `promtool` (installed
#   when root).
# - the Kubernetes manifests' test: the pinned kubernetes-validate of
#   tests/kubernetes-requirements.txt in the venv (kubectl's kustomize
#   renders them).
# - the image test: Debian's podman, buildah and runc (installed when root).
# Each step is skipped when what it would produce is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "setup: $*" >&2
  exit 1
}

sha_of() {
  sha256sum "$1" | cut -d' ' -f1
}

if [ -x scripts/fetch-ctk-vectors.sh ]; then
  scripts/fetch-ctk-vectors.sh
fi

# --- Python example --------------------------------------------------------
PY="${PYTHON:-python3}"
VENV=".cache/venv"
REQS="examples/python/requirements.txt"
command -v "${PY}" >/dev/null 2>&1 || die "python3 is required (set PYTHON to use another interpreter)"
if [ ! -x "${VENV}/bin/python" ]; then
  "${PY}" -m venv "${VENV}" || die "could not create a venv in ${VENV}"
fi
REQS_STAMP="${VENV}/.hookwire-requirements-sha256"
if [ ! -f "${REQS_STAMP}" ] || [ "$(cat "${REQS_STAMP}")" != "$(sha_of "${REQS}")" ] ||
  ! "${VENV}/bin/python" -c 'import grpc, grpc_tools, grpc_health, grpc_reflection' >/dev/null 2>&1; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${REQS}" ||
    die "pip install -r ${REQS} failed (is PyPI reachable?)"
  sha_of "${REQS}" >"${REQS_STAMP}"
  echo "setup: installed ${REQS} into ${VENV}"
fi
# The official SDKs (exact versions) for the gateway's tests and example:
# openai and anthropic (examples/gateway/requirements.txt), openai-agents
# (tests/gateway-requirements.txt), resolved together and stamped with both
# files' SHA-256.
GW_REQS="examples/gateway/requirements.txt"
SDK_REQS="tests/gateway-requirements.txt"
GW_STAMP="${VENV}/.hookwire-gateway-requirements-sha256"
GW_SHA="$(cat "${GW_REQS}" "${SDK_REQS}" | sha256sum | cut -d' ' -f1)"
if [ ! -f "${GW_STAMP}" ] || [ "$(cat "${GW_STAMP}")" != "${GW_SHA}" ] ||
  ! "${VENV}/bin/python" -c 'import openai, agents, anthropic' >/dev/null 2>&1; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${GW_REQS}" -r "${SDK_REQS}" ||
    die "pip install -r ${GW_REQS} -r ${SDK_REQS} failed (is PyPI reachable?)"
  echo "${GW_SHA}" >"${GW_STAMP}"
  echo "setup: installed ${GW_REQS} and ${SDK_REQS} into ${VENV}"
fi
# The official MCP SDK (exact version) for the MCP proxy's tests: the
# client over stdio and Streamable HTTP and the upstream server of
# tests/fixtures/mcp/, stamped with its file's SHA-256. In mcp 2.x FastMCP
# is `mcp.server.mcpserver.MCPServer` (`mcp.server.fastmcp` only raises a
# pointer to the rename), so that is the module checked.
MCP_REQS="tests/mcp-requirements.txt"
MCP_STAMP="${VENV}/.hookwire-mcp-requirements-sha256"
if [ ! -f "${MCP_STAMP}" ] || [ "$(cat "${MCP_STAMP}")" != "$(sha_of "${MCP_REQS}")" ] ||
  ! "${VENV}/bin/python" -c 'import mcp, mcp.server.mcpserver, mcp.client.stdio, mcp.client.streamable_http' >/dev/null 2>&1; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${MCP_REQS}" ||
    die "pip install -r ${MCP_REQS} failed (is PyPI reachable?)"
  sha_of "${MCP_REQS}" >"${MCP_STAMP}"
  echo "setup: installed ${MCP_REQS} into ${VENV}"
fi
# The hookwire package (sdks/python): its build and test pins, then the
# package itself, editable and built offline from those pins (no isolated
# build env, no download at build time). Stamped with both files' SHA-256;
# tests/polyglot/ and cli/tests wait for the stamp.
PKG_DIR="sdks/python"
PKG_STAMP="${VENV}/.hookwire-sdk-python-sha256"
PKG_SHA="$(cat "${PKG_DIR}/requirements-dev.txt" "${PKG_DIR}/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "${PKG_STAMP}" ] || [ "$(cat "${PKG_STAMP}")" != "${PKG_SHA}" ] ||
  ! "${VENV}/bin/python" -c 'import hookwire.server, agent_hooks, agent_framework, agent_framework_openai, pytest' >/dev/null 2>&1; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${PKG_DIR}/requirements-dev.txt" ||
    die "pip install -r ${PKG_DIR}/requirements-dev.txt failed (is PyPI reachable?)"
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e "${PKG_DIR}" ||
    die "pip install -e ${PKG_DIR} failed"
  echo "${PKG_SHA}" >"${PKG_STAMP}"
  echo "setup: installed ${PKG_DIR} (editable) and its pins into ${VENV}"
fi

# The offline Kubernetes schema validator (exact versions) for
# cli/tests/deploy.rs, stamped with its file's SHA-256.
K8S_REQS="tests/kubernetes-requirements.txt"
K8S_STAMP="${VENV}/.hookwire-kubernetes-requirements-sha256"
if [ ! -f "${K8S_STAMP}" ] || [ "$(cat "${K8S_STAMP}")" != "$(sha_of "${K8S_REQS}")" ] ||
  ! "${VENV}/bin/python" -c 'import kubernetes_validate' >/dev/null 2>&1; then
  "${VENV}/bin/python" -m pip install --quiet --disable-pip-version-check -r "${K8S_REQS}" ||
    die "pip install -r ${K8S_REQS} failed (is PyPI reachable?)"
  sha_of "${K8S_REQS}" >"${K8S_STAMP}"
  echo "setup: installed ${K8S_REQS} into ${VENV}"
fi

# --- TypeScript package and the Node example on it --------------------------
command -v npm >/dev/null 2>&1 || die "node and npm are required for sdks/typescript and examples/node"
# The package (sdks/typescript): its pinned tree, then its build (dist/),
# stamped with the SHA-256 of what the build reads; tests/polyglot waits for
# the build stamp, and examples/node links the package by path.
TS_DIR="sdks/typescript"
TS_STAMP="${TS_DIR}/node_modules/.hookwire-lock-sha256"
if [ ! -f "${TS_STAMP}" ] || [ "$(cat "${TS_STAMP}")" != "$(sha_of "${TS_DIR}/package-lock.json")" ]; then
  (cd "${TS_DIR}" && npm ci --no-audit --no-fund --loglevel=error) ||
    die "npm ci in ${TS_DIR} failed (is the npm registry reachable?)"
  sha_of "${TS_DIR}/package-lock.json" >"${TS_STAMP}"
  echo "setup: npm ci in ${TS_DIR}"
fi
TS_BUILD_STAMP="${TS_DIR}/node_modules/.hookwire-build-sha256"
TS_BUILD_SHA="$(cat "${TS_DIR}/package-lock.json" "${TS_DIR}/tsconfig.json" "${TS_DIR}"/src/*.ts | sha256sum | cut -d' ' -f1)"
if [ ! -f "${TS_BUILD_STAMP}" ] || [ "$(cat "${TS_BUILD_STAMP}")" != "${TS_BUILD_SHA}" ]; then
  (cd "${TS_DIR}" && npm run --silent build) || die "the build of ${TS_DIR} failed"
  echo "${TS_BUILD_SHA}" >"${TS_BUILD_STAMP}"
  echo "setup: built ${TS_DIR}"
fi
NODE_DIR="examples/node"
LOCK_STAMP="${NODE_DIR}/node_modules/.hookwire-lock-sha256"
if [ ! -f "${LOCK_STAMP}" ] || [ "$(cat "${LOCK_STAMP}")" != "$(sha_of "${NODE_DIR}/package-lock.json")" ]; then
  (cd "${NODE_DIR}" && npm ci --no-audit --no-fund --loglevel=error) ||
    die "npm ci in ${NODE_DIR} failed (is the npm registry reachable?)"
  sha_of "${NODE_DIR}/package-lock.json" >"${LOCK_STAMP}"
  echo "setup: npm ci in ${NODE_DIR}"
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

# --- Coding-agent tests: the real Claude Code and Codex CLIs ----------------
# hooks/tests/hooks/claude_code.rs runs the official Claude Code CLI
# (@anthropic-ai/claude-code) headless against a mock Messages server,
# governed through `hookwire hook`; gateway/tests/gateway/coding_agents.rs runs it and the
# Codex CLI (@openai/codex) through `hookwire gateway`. Both are pinned in
# tests/agents/package-lock.json. Each CLI is the native binary of its
# optional dependency (@anthropic-ai/claude-code-linux-x64,
# @openai/codex-linux-x64); npm may warn that the Claude Code wrapper wants
# a newer node, which the binary does not need.
AGENTS_DIR="tests/agents"
AGENTS_STAMP="${AGENTS_DIR}/node_modules/.hookwire-lock-sha256"
AGENTS_LOCK_SHA="$(sha_of "${AGENTS_DIR}/package-lock.json")"
if [ ! -f "${AGENTS_STAMP}" ] || [ "$(cat "${AGENTS_STAMP}")" != "${AGENTS_LOCK_SHA}" ]; then
  (cd "${AGENTS_DIR}" && npm ci --no-audit --no-fund --loglevel=error) ||
    die "npm ci in ${AGENTS_DIR} failed (is the npm registry reachable?)"
  echo "${AGENTS_LOCK_SHA}" >"${AGENTS_STAMP}"
  echo "setup: npm ci in ${AGENTS_DIR}"
fi

# --- MCP proxy tests: the official TypeScript MCP SDK -----------------------
# mcp/tests/proxy/sdk/ runs tests/fixtures/mcp/ts/upstream.mjs, an MCP server on
# @modelcontextprotocol/sdk (pinned in its package-lock.json), over stdio
# behind `hookwire mcp`.
MCP_TS_DIR="tests/fixtures/mcp/ts"
MCP_TS_STAMP="${MCP_TS_DIR}/node_modules/.hookwire-lock-sha256"
MCP_TS_LOCK_SHA="$(sha_of "${MCP_TS_DIR}/package-lock.json")"
if [ ! -f "${MCP_TS_STAMP}" ] || [ "$(cat "${MCP_TS_STAMP}")" != "${MCP_TS_LOCK_SHA}" ]; then
  (cd "${MCP_TS_DIR}" && npm ci --no-audit --no-fund --loglevel=error) ||
    die "npm ci in ${MCP_TS_DIR} failed (is the npm registry reachable?)"
  echo "${MCP_TS_LOCK_SHA}" >"${MCP_TS_STAMP}"
  echo "setup: npm ci in ${MCP_TS_DIR}"
fi

# --- Metrics tests: promtool -----------------------------------------------
# tests/metrics.rs and cli/tests/metrics.rs check every /metrics exposition
# and the shipped alert rules with promtool, from Debian's prometheus package.
if [ -z "${PROMTOOL:-}" ] && ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; } || {
      echo "setup: apt-get install prometheus failed" >&2
      exit 1
    }
    echo "setup: installed prometheus (promtool)"
  else
    echo "setup: warning: promtool is missing and apt-get cannot run here (not root?);" \
      "the metrics tests will fail until it is installed (apt-get install prometheus)" >&2
  fi
fi

# --- Gateway replicas test: nginx ---------------------------------------------
# gateway/tests/gateway/command/replicas.rs puts two gateway processes behind Debian's nginx
# (round robin on a loopback port, started by the test with its own prefix).
if [ -z "${NGINX:-}" ] && ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; } || {
      echo "setup: apt-get install nginx-light failed" >&2
      exit 1
    }
    echo "setup: installed nginx-light"
  else
    echo "setup: warning: nginx is missing and apt-get cannot run here (not root?);" \
      "the gateway replicas test will fail until it is installed (apt-get install nginx-light)" >&2
  fi
fi

# --- Shared approval queue tests: PostgreSQL -------------------------------
# approvals-postgres/tests start throwaway clusters (initdb/pg_ctl as the
# postgres user, on a free loopback port) from Debian's server binaries.
# The package's own default cluster is dropped again: nothing is left
# running.
if [ -z "${PG_BIN:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    had_main=$(ls -d /etc/postgresql/*/main 2>/dev/null || true)
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null; } || {
      echo "setup: apt-get install postgresql-15 failed" >&2
      exit 1
    }
    if [ -z "${had_main}" ] && command -v pg_dropcluster >/dev/null 2>&1; then
      for dir in /etc/postgresql/*/main; do
        [ -d "${dir}" ] || continue
        version=$(basename "$(dirname "${dir}")")
        pg_dropcluster --stop "${version}" main || true
      done
    fi
    echo "setup: installed postgresql-15"
  else
    echo "setup: warning: PostgreSQL's server binaries are missing and apt-get cannot run here (not root?);" \
      "the approvals-postgres tests will fail until it is installed (apt-get install postgresql-15)" >&2
  fi
fi

# --- The image test: podman, buildah and runc -------------------------------
# scripts/image.sh imports a root filesystem with buildah (no base image);
# cli/tests/image.rs runs the image with rootful podman. runc beside
# Debian's default crun: crun refuses hosts whose cgroups are mounted in
# hybrid mode (v1 controllers with a v2 hierarchy), runc runs there. On
# bookworm this gives podman 4.3.1, buildah 1.28.2 and runc 1.1.5.
if ! command -v podman >/dev/null 2>&1 || ! command -v buildah >/dev/null 2>&1 ||
  ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc >/dev/null; } || {
      echo "setup: apt-get install podman buildah runc failed" >&2
      exit 1
    }
    echo "setup: installed podman, buildah and runc"
  else
    echo "setup: warning: podman, buildah or runc is missing and apt-get cannot run here (not root?);" \
      "cli/tests/image.rs skips until they are installed (apt-get install podman buildah runc)" >&2
  fi
fi
