#!/usr/bin/env bash
# Runs hookwire's default test suite on a fresh machine: installs what the
# tests need (nothing system-wide beyond the project's own caches), then runs
# every test of the workspace and of the Python package.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/setup.sh ]; then
  scripts/setup.sh
fi

# The Python package: its pytest suite (stubs fresh, real servers on
# loopback), then its wheel, built offline from the venv's pinned backend,
# checked to carry the generated stubs and py.typed.
sdks/python/scripts/test.sh

cargo test --workspace --locked "$@"
