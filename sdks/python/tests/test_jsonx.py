"""Exact JSON: what is kept exactly and what is refused."""

import math

import pytest

from hookwire import jsonx


def test_integers_stay_exact_to_the_64_bit_bounds():
    assert jsonx.loads("18446744073709551615") == 2**64 - 1
    assert jsonx.loads("-9223372036854775808") == -(2**63)
    assert type(jsonx.loads("9007199254740993")) is int
    assert jsonx.loads("9007199254740993") == 2**53 + 1
    assert jsonx.dumps({"n": 2**64 - 1}) == '{"n":18446744073709551615}'


@pytest.mark.parametrize("text", ["18446744073709551616", "-9223372036854775809", "1" * 400])
def test_integers_beyond_the_range_are_refused(text):
    with pytest.raises(jsonx.InvalidJson) as e:
        jsonx.loads(text)
    assert text not in str(e.value)


def test_one_and_one_point_zero_stay_distinct():
    assert type(jsonx.loads("1")) is int and type(jsonx.loads("1.0")) is float
    assert jsonx.dumps([1, 1.0]) == "[1,1.0]"


@pytest.mark.parametrize("text", ['{"a":1,"a":2}', "NaN", "[Infinity]", "1e400", "{", "[1,]", "01"])
def test_what_the_host_refuses_is_refused(text):
    with pytest.raises(jsonx.InvalidJson):
        jsonx.loads(text)


def test_depth_is_bounded_before_parsing():
    assert jsonx.loads("[" * 128 + "]" * 128) is not None
    with pytest.raises(jsonx.InvalidJson, match="deeper"):
        jsonx.loads("[" * 129 + "]" * 129)
    with pytest.raises(jsonx.InvalidJson, match="deeper"):
        jsonx.loads("[" * 100_000)
    # Brackets inside strings do not count.
    assert jsonx.loads('"' + "[" * 500 + '"') == "[" * 500


@pytest.mark.parametrize("value", [math.nan, math.inf, 2**64, {1: "x"}, object(), b"x"])
def test_writing_refuses_what_is_not_exact_json(value):
    with pytest.raises(jsonx.InvalidJson):
        jsonx.dumps(value)


def test_unicode_round_trips():
    value = {"é": "😀\u0000", "k": [None, True, False, -0.5]}
    assert jsonx.loads(jsonx.dumps(value)) == value
