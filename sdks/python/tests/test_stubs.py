"""The checked-in stubs match proto/, and the staleness check can fail."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "scripts", "gen.py")


def load_gen():
    spec = importlib.util.spec_from_file_location("hookwire_gen", GEN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stubs_are_fresh(monkeypatch):
    gen = load_gen()
    assert gen.stamped() == gen.proto_digest()
    monkeypatch.setattr(sys, "argv", ["gen.py", "--check"])
    assert gen.main() == 0


def test_a_stale_stamp_fails_the_check(monkeypatch, tmp_path):
    gen = load_gen()
    stale = tmp_path / "PROTO_SHA256"
    stale.write_text("0" * 64 + "\n")
    monkeypatch.setattr(gen, "STAMP", str(stale))
    monkeypatch.setattr(sys, "argv", ["gen.py", "--check"])
    assert gen.main() == 1
