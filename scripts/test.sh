#!/usr/bin/env bash
# Runs hookwire's default test suite on a fresh machine: installs what the
# tests need (nothing system-wide beyond the project's own caches), then runs
# every test of the workspace and of the Python and TypeScript packages.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/setup.sh ]; then
  scripts/setup.sh
fi

# The Python package: its pytest suite (stubs fresh, real servers on
# loopback), then its wheel, built offline from the venv's pinned backend,
# checked to carry the generated stubs and py.typed.
sdks/python/scripts/test.sh

# The TypeScript package: its build with the pinned tsc, the Node test
# runner's suite on the built output (real servers on loopback, a real
# grpc-js client), and the package's file list.
sdks/typescript/scripts/test.sh

cargo test --workspace --locked "$@"
