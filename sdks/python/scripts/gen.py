"""Writes the checked-in gRPC stubs of ``src/hookwire/v1/`` from the
repository's ``proto/hookwire/v1/interceptor.proto`` and ``approval.proto``
(the approver client's) with grpcio-tools.

The stubs are committed (as the Rust side commits ``src/pb/``), so neither
a user installing the package nor its wheel build needs protoc or
grpcio-tools; ``--check`` exits 1 when they are stale (the test suite
runs it), and a run without it regenerates them.

    .cache/venv/bin/python sdks/python/scripts/gen.py          # regenerate
    .cache/venv/bin/python sdks/python/scripts/gen.py --check  # fail if stale
"""

import argparse
import hashlib
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PROTO_ROOT = os.path.join(ROOT, "proto")
PROTO_FILES = ("hookwire/v1/interceptor.proto", "hookwire/v1/approval.proto")
OUT = os.path.normpath(os.path.join(HERE, "..", "src"))
STAMP = os.path.join(OUT, "hookwire", "v1", "PROTO_SHA256")
GENERATED = tuple(
    os.path.basename(f)[: -len(".proto")] + suffix
    for f in PROTO_FILES
    for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
)


def proto_digest() -> str:
    """The SHA-256 over the protos the stubs are made from (each file's
    name and bytes, in order)."""
    digest = hashlib.sha256()
    for name in PROTO_FILES:
        with open(os.path.join(PROTO_ROOT, name), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def stamped() -> str:
    """The digest the checked-in stubs were made from ('' when none)."""
    try:
        with open(STAMP, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def generate() -> None:
    """Runs grpc_tools.protoc into a scratch directory and copies the
    generated files and the stamp into the package."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as scratch:
        args = [
            "grpc_tools.protoc",
            "-I" + PROTO_ROOT,
            "--python_out=" + scratch,
            "--grpc_python_out=" + scratch,
            "--pyi_out=" + scratch,
            *PROTO_FILES,
        ]
        if protoc.main(args) != 0:
            sys.exit("gen: grpc_tools.protoc failed on " + ", ".join(PROTO_FILES))
        for name in GENERATED:
            shutil.copyfile(
                os.path.join(scratch, "hookwire", "v1", name),
                os.path.join(OUT, "hookwire", "v1", name),
            )
    with open(STAMP, "w", encoding="ascii") as f:
        f.write(proto_digest() + "\n")


def main() -> int:
    """Regenerates, or with ``--check`` reports staleness."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the stubs are stale")
    args = parser.parse_args()
    fresh = stamped() == proto_digest()
    if args.check:
        if not fresh:
            print("gen: the stubs in sdks/python/src/hookwire/v1 are stale: run sdks/python/scripts/gen.py", file=sys.stderr)
            return 1
        return 0
    generate()
    print("gen: stubs written to " + os.path.join(OUT, "hookwire", "v1"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
