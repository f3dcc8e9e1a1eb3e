#!/usr/bin/env bash
# Prepares what hookwire's tests need, idempotently and into .cache/ only:
# - the official AGENT-HOOKS conformance vectors (pinned wheel, hash-checked).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/fetch-ctk-vectors.sh ]; then
  scripts/fetch-ctk-vectors.sh
fi
