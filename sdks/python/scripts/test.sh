#!/usr/bin/env bash
# The hookwire Python package's checks, run by scripts/test.sh after
# scripts/setup.sh: the checked-in stubs match proto/, the pytest suite
# passes, and the wheel builds offline from the venv's pinned hatchling with
# the stubs and py.typed inside. Any failure fails the run.
set -euo pipefail
cd "$(dirname "$0")/../../.."

PY=".cache/venv/bin/python"
[ -x "${PY}" ] || { echo "sdks/python: ${PY} is missing: run scripts/setup.sh" >&2; exit 1; }

"${PY}" sdks/python/scripts/gen.py --check
"${PY}" -m pytest -q -p no:cacheprovider sdks/python/tests

WHEELS="$(mktemp -d)"
trap 'rm -rf "${WHEELS}"' EXIT
"${PY}" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps -w "${WHEELS}" sdks/python
"${PY}" - "${WHEELS}" <<'PYEOF'
import glob, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/hookwire-*.whl")
assert len(wheels) == 1, wheels
names = set(zipfile.ZipFile(wheels[0]).namelist())
need = {"hookwire/py.typed", "hookwire/v1/interceptor_pb2.py", "hookwire/v1/interceptor_pb2.pyi",
        "hookwire/v1/interceptor_pb2_grpc.py", "hookwire/v1/approval_pb2.py", "hookwire/v1/approval_pb2_grpc.py",
        "hookwire/server.py", "hookwire/agent_hooks.py", "hookwire/approvals.py"}
missing = sorted(need - names)
assert not missing, "the wheel lacks %s" % missing
print("sdks/python: wheel %s carries the stubs and py.typed" % wheels[0].rsplit("/", 1)[1])
PYEOF
