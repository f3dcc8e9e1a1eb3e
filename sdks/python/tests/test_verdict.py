"""Verdict builders and the §5 validation applied before sending."""

import pytest

import hookwire
from hookwire import verdict as v


def test_builders_make_the_spec_shapes():
    assert hookwire.allow() == {"decision": "allow"}
    assert hookwire.deny("p:x", "m") == {"decision": "deny", "reason": "p:x", "message": "m"}
    assert hookwire.transform("$target.a", 1) == {"decision": "transform", "transform": {"path": "$target.a", "value": 1}}
    assert hookwire.warn("p:w") == {"decision": "allow", "warnings": [{"reason": "p:w"}]}
    assert hookwire.escalate("p:e") == {"decision": "deny", "reason": "p:e", "approval": {}}


@pytest.mark.parametrize(
    "bad",
    [
        {"decision": "maybe"},
        {"decision": "deny", "reason": "host_error:interceptor_failed"},
        {"decision": "allow", "approval": {}},
        {"decision": "transform"},
        {"decision": "allow", "transform": {"path": "$target", "value": 1}},
        {"decision": "transform", "transform": {"path": "target.a", "value": 1}},
        {"decision": "deny", "approval": []},
        {"decision": "deny", "evidence": {"blob": "x" * 20_000}},
        {"decision": "allow", "reason": "r" * 1025},
        {"decision": "allow", "warnings": [{"reason": "w"}] * 65},
        {"decision": "allow", "result_labels": [7]},
        {"decision": "allow", "extra": 1},
        {"decision": "transform", "transform": {"path": "$target", "value": float("nan")}},
        "allow",
    ],
)
def test_invalid_verdicts_are_refused(bad):
    with pytest.raises(hookwire.InvalidVerdict):
        v.validate(bad)


def test_builders_refuse_reserved_reasons():
    with pytest.raises(hookwire.InvalidVerdict):
        hookwire.deny("host_error:timeout")


def test_transform_is_forbidden_at_the_session_boundaries():
    t = hookwire.transform("$target", {})
    v.validate(t, "input")
    for point in ("agent_startup", "agent_shutdown"):
        with pytest.raises(hookwire.InvalidVerdict, match="forbidden"):
            v.validate(t, point)


def test_response_extensions_are_namespaced_and_bounded():
    v.validate_response(hookwire.Response(hookwire.allow(), {"acme": {"receipt": "r"}}))
    with pytest.raises(hookwire.InvalidVerdict):
        v.validate_response(hookwire.Response(hookwire.allow(), {"Acme": 1}))
    with pytest.raises(hookwire.InvalidVerdict):
        v.validate_response(hookwire.Response(hookwire.allow(), {"acme": "x" * 70_000}))
