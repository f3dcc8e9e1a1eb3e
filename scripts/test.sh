#!/usr/bin/env bash
# Runs hookwire's default test suite on a fresh machine: installs what the
# tests need (nothing system-wide beyond the project's own caches), then runs
# every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/setup.sh ]; then
  scripts/setup.sh
fi

cargo test --workspace --locked "$@"
