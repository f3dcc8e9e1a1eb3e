#!/usr/bin/env bash
# Runs examples/gateway end to end on loopback, without a provider key: the
# demo's interceptor services (`hookwire serve-demo`, 127.0.0.1:50151 and
# :50152), the mock model (mock_model.py, 127.0.0.1:50161), the gateway
# (127.0.0.1:50160) governed by examples/declarations/demo.json, and the
# agent (agent.py) once per API and mode. Stops everything it started.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: examples/gateway/run.sh [--api chat|responses|messages|all] [--help]

Runs the gateway example offline: `hookwire serve-demo`, the mock model
(examples/gateway/mock_model.py), `hookwire gateway` on 127.0.0.1:50160
with examples/declarations/demo.json, then examples/gateway/agent.py
through the gateway for each API asked (default all: Chat Completions and
Responses on the `openai` SDK, Messages on the `anthropic` SDK), whole and
streamed. The policy removes the model's `rm -rf` call; the redactor keeps
the e-mail address from the model (the mock's log shows `[email]`).

Needs:
  hookwire   on the PATH, or its path in $HOOKWIRE
             (install it: cargo install --path cli)
  python     with the pinned `openai` and `anthropic` SDKs
             (examples/gateway/requirements.txt): .cache/venv/bin/python
             after scripts/setup.sh, or the interpreter in $PYTHON
Uses the ports 127.0.0.1:50151, 50152, 50160 and 50161.
EOF
}

APIS=(chat responses messages)
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --api)
      [ $# -ge 2 ] || { echo "run.sh: --api needs a value" >&2; exit 2; }
      case "$2" in
        chat | responses | messages) APIS=("$2") ;;
        all) ;;
        *) echo "run.sh: --api: chat, responses, messages or all, not '$2'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/../.."
HOOKWIRE="${HOOKWIRE:-hookwire}"
if ! command -v "${HOOKWIRE}" >/dev/null 2>&1; then
  echo "run.sh: '${HOOKWIRE}' is not on the PATH: install it with 'cargo install --path cli'" \
    "(or set HOOKWIRE to the binary)" >&2
  exit 1
fi
PY="${PYTHON:-.cache/venv/bin/python}"
if ! "${PY}" -c 'import openai, anthropic' 2>/dev/null; then
  echo "run.sh: ${PY} cannot import openai and anthropic: run scripts/setup.sh," \
    "or pip install -r examples/gateway/requirements.txt and set PYTHON" >&2
  exit 1
fi

GATEWAY=127.0.0.1:50160
MODEL=127.0.0.1:50161
for port in 50151 50152 50160 50161; do
  if (echo >"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
    echo "run.sh: 127.0.0.1:${port} is already in use: stop what listens there first" >&2
    exit 1
  fi
done

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# Waits until PORT accepts connections while the process PID runs (10 s).
wait_for() {
  local port="$1" pid="$2" what="$3"
  for _ in $(seq 100); do
    (echo >"/dev/tcp/127.0.0.1/${port}") 2>/dev/null && return 0
    kill -0 "${pid}" 2>/dev/null || { echo "run.sh: ${what} exited" >&2; exit 1; }
    sleep 0.1
  done
  echo "run.sh: ${what} is not listening on 127.0.0.1:${port} after 10 s" >&2
  exit 1
}

"${HOOKWIRE}" serve-demo >/dev/null & pids+=($!)
wait_for 50151 "$!" "hookwire serve-demo"
wait_for 50152 "${pids[-1]}" "hookwire serve-demo"
"${PY}" examples/gateway/mock_model.py --listen "${MODEL}" & pids+=($!)
wait_for "${MODEL##*:}" "$!" "the mock model"
"${HOOKWIRE}" gateway --listen "${GATEWAY}" --upstream "http://${MODEL}/v1" \
  --declaration examples/declarations/demo.json & pids+=($!)
wait_for "${GATEWAY##*:}" "$!" "hookwire gateway"

export OPENAI_BASE_URL="http://${GATEWAY}/v1" OPENAI_API_KEY=sk-example-not-a-real-key
export ANTHROPIC_BASE_URL="http://${GATEWAY}" ANTHROPIC_API_KEY=sk-ant-example-not-a-real-key
for api in "${APIS[@]}"; do
  for mode in "" --stream; do
    echo
    "${PY}" examples/gateway/agent.py --api "${api}" ${mode}
  done
done
