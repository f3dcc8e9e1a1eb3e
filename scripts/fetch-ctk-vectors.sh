#!/usr/bin/env bash
# Fetches the official AGENT-HOOKS conformance vectors into .cache/ctk/.
#
# The vectors ship only inside the pinned PyPI wheel agent-hooks-sdk==0.1.0b3.
# This script downloads that wheel with pip (no dependencies, no install),
# checks its SHA-256, and extracts agent_hooks/ctk/vectors/*.json into
# .cache/ctk/vectors/ and agent_hooks/schema/* into .cache/ctk/schema/.
# Nothing is committed: .cache/ is gitignored.
#
# Idempotent: once the vectors and schemas of this exact wheel are in place
# it does nothing (a cache holding the vectors without the schemas is
# extracted again). Set CTK_FORCE=1 to fetch and extract again.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="0.1.0b3"
WHEEL="agent_hooks_sdk-${VERSION}-cp310-abi3-manylinux_2_28_x86_64.whl"
SHA256="a471666a8f3d995a2b4c831c3790704b14bf5b7d595f82f5009c36ef25d05090"

CACHE=".cache"
DEST="${CACHE}/ctk"
WHEELS="${CACHE}/wheels"
STAMP="${DEST}/.wheel-sha256"

die() {
  echo "fetch-ctk-vectors: $*" >&2
  exit 1
}

if [ "${CTK_FORCE:-0}" != "1" ] && [ -f "${STAMP}" ] &&
  [ "$(cat "${STAMP}")" = "${SHA256}" ] &&
  compgen -G "${DEST}/vectors/AH-CTK-*.json" >/dev/null &&
  [ -f "${DEST}/schema/interception-record.schema.json" ] &&
  compgen -G "${DEST}/schema/agent-context/*.schema.json" >/dev/null; then
  exit 0
fi

sha_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    "${PY}" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"
  fi
}

# A Python with pip: the system one if it has pip, else a venv under .cache/.
PY="${PYTHON:-python3}"
command -v "${PY}" >/dev/null 2>&1 || die "python3 is required (set PYTHON to use another interpreter)"
if ! "${PY}" -m pip --version >/dev/null 2>&1; then
  VENV="${CACHE}/venv"
  if [ ! -x "${VENV}/bin/python" ]; then
    "${PY}" -m venv "${VENV}" || die "no pip available and could not create a venv in ${VENV}"
  fi
  PY="${VENV}/bin/python"
  "${PY}" -m pip --version >/dev/null 2>&1 || die "the venv in ${VENV} has no pip"
fi

mkdir -p "${WHEELS}"
if [ ! -f "${WHEELS}/${WHEEL}" ] || [ "$(sha_of "${WHEELS}/${WHEEL}")" != "${SHA256}" ]; then
  rm -f "${WHEELS}/${WHEEL}"
  # Pin the platform tags so that the same file is chosen on any machine.
  "${PY}" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --implementation cp --python-version 3.10 --abi abi3 \
    --dest "${WHEELS}" "agent-hooks-sdk==${VERSION}" ||
    die "pip download agent-hooks-sdk==${VERSION} failed (is PyPI reachable?)"
  [ -f "${WHEELS}/${WHEEL}" ] || die "pip did not produce ${WHEEL}"
fi

ACTUAL="$(sha_of "${WHEELS}/${WHEEL}")"
if [ "${ACTUAL}" != "${SHA256}" ]; then
  rm -f "${WHEELS}/${WHEEL}"
  die "SHA-256 mismatch for ${WHEEL}: expected ${SHA256}, got ${ACTUAL}"
fi

# Extract into a scratch directory, then swap it in, so an interrupted run
# never leaves a half-populated vector set behind.
TMP="$(mktemp -d "${CACHE}/ctk.tmp.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT
"${PY}" - "${WHEELS}/${WHEEL}" "${TMP}" <<'EOF'
import os, sys, zipfile

wheel, out = sys.argv[1], sys.argv[2]
wanted = {
    "agent_hooks/ctk/vectors/": "vectors",
    "agent_hooks/schema/": "schema",
}
count = {"vectors": 0, "schema": 0}
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        for prefix, folder in wanted.items():
            if not name.startswith(prefix) or name.endswith("/"):
                continue
            rel = name[len(prefix):]
            if folder == "vectors" and ("/" in rel or not rel.endswith(".json")):
                continue
            parts = rel.split("/")
            if any(p in ("", ".", "..") for p in parts):
                continue
            dest = os.path.join(out, folder, *parts)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with zf.open(name) as src, open(dest, "wb") as dst:
                dst.write(src.read())
            count[folder] += 1
if count["vectors"] == 0:
    sys.exit("no agent_hooks/ctk/vectors/*.json in the wheel")
if count["schema"] == 0:
    sys.exit("no agent_hooks/schema/ in the wheel")
print(f"fetch-ctk-vectors: {count['vectors']} vectors, {count['schema']} schema files")
EOF
echo "${SHA256}" >"${TMP}/.wheel-sha256"
rm -rf "${DEST}"
mv "${TMP}" "${DEST}"
trap - EXIT
