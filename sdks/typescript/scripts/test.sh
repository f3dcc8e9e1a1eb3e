#!/usr/bin/env bash
# The hookwire TypeScript package's checks, run by scripts/test.sh after
# scripts/setup.sh: npm ci from package-lock.json (when the installed tree
# is not that lock's), the build with the pinned tsc (types emitted), the
# Node test runner's suite on the built output (real servers on loopback,
# a real grpc-js client), the checked-in dist/ checked fresh, the
# documented install from a fresh clone's files (scripts/install-check.sh),
# and the package's file list checked to carry the built code, its .d.ts
# and the proto. Any failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v npm >/dev/null 2>&1 || { echo "sdks/typescript: node and npm are required" >&2; exit 1; }
STAMP="node_modules/.hookwire-lock-sha256"
LOCK_SHA="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "${STAMP}" ] || [ "$(cat "${STAMP}")" != "${LOCK_SHA}" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "${LOCK_SHA}" >"${STAMP}"
fi
npm run --silent build
# dist/ is checked in (a fresh clone installs without building): the
# build of today's sources must be what is committed.
if [ -n "$(git status --porcelain -- dist)" ]; then
  echo "sdks/typescript: dist/ differs from the build of src/: run npm run build there and commit dist/" >&2
  git status --short -- dist >&2
  exit 1
fi
node --test test/*.test.mjs
scripts/install-check.sh

npm pack --dry-run --json --loglevel=error | node -e '
  const files = new Set(JSON.parse(require("fs").readFileSync(0, "utf8"))[0].files.map((f) => f.path));
  const need = ["dist/index.js", "dist/index.d.ts", "dist/multiplex.js", "dist/server.d.ts",
    "proto/hookwire/v1/interceptor.proto", "package.json", "README.md"];
  const missing = need.filter((f) => !files.has(f));
  if (missing.length) { console.error("sdks/typescript: the package lacks " + missing.join(", ")); process.exit(1); }
  console.log("sdks/typescript: the package carries the built code, its types and the proto");
'
