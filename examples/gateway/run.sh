#!/usr/bin/env bash
# Runs examples/gateway end to end on loopback: the demo's interceptor
# services (`hookwire serve-demo`), a mock OpenAI-compatible model, the
# gateway governed by examples/declarations/demo.json, and the OpenAI-SDK
# agent (twice: in one piece and streamed). Stops everything it started.
# Needs scripts/setup.sh (the venv with the pinned `openai`).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=.cache/venv/bin/python
GATEWAY=127.0.0.1:50160
UPSTREAM=127.0.0.1:50161
"${PY}" -c 'import openai' 2>/dev/null || { echo "run scripts/setup.sh first" >&2; exit 1; }
cargo build -q -p hookwire-cli
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
target/debug/hookwire serve-demo >/dev/null & pids+=($!)
"${PY}" examples/gateway/mock_upstream.py "${UPSTREAM##*:}" & pids+=($!)
target/debug/hookwire gateway --listen "${GATEWAY}" --upstream "http://${UPSTREAM}/v1" \
  --declaration examples/declarations/demo.json & pids+=($!)
for _ in $(seq 50); do
  (echo >"/dev/tcp/${GATEWAY%:*}/${GATEWAY##*:}") 2>/dev/null && break
  sleep 0.2
done
export OPENAI_BASE_URL="http://${GATEWAY}/v1" OPENAI_API_KEY=sk-example-not-a-real-key
"${PY}" examples/gateway/agent.py
echo
"${PY}" examples/gateway/agent.py --stream
