"""Exact JSON text, as the wire contract requires of every ``JsonValue``.

Parsing refuses what the hookwire host refuses: malformed text, duplicate
member names, ``NaN``/``Infinity`` (and numbers that overflow to them),
nesting deeper than :data:`MAX_DEPTH`, and integers outside the 64-bit
range a host can represent. Integers inside it stay Python ``int`` exactly
(no rounding through ``float``). Writing is compact RFC 8259 text with
the same checks, so a value this package sends is one the host accepts.
Error messages name the kind of fault, never the text.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Deepest nesting accepted, the host's own bound.
MAX_DEPTH = 128
#: The integer range a hookwire host represents exactly (i64 and u64).
MIN_INT = -(2**63)
MAX_INT = 2**64 - 1


class InvalidJson(ValueError):
    """A JSON text or value the host would refuse; the message never quotes it."""


def _refuse_constant(name: str) -> Any:
    raise InvalidJson("non-finite number")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise InvalidJson("number out of range")
    return value


def _int(text: str) -> int:
    if len(text) > 21:
        raise InvalidJson("integer beyond the 64-bit range")
    value = int(text)
    if not MIN_INT <= value <= MAX_INT:
        raise InvalidJson("integer beyond the 64-bit range")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise InvalidJson("duplicate object member name")
        obj[k] = v
    return obj


def _depth_ok(text: str) -> bool:
    """Whether the brackets outside strings nest at most MAX_DEPTH deep
    (checked before parsing, so deep input never reaches the recursion)."""
    # Exact fast path: nesting never exceeds the opening brackets present
    # (counted in C; the scan below costs ~50 µs per KiB in Python).
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return True
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def loads(text: str) -> Any:
    """Parses one JSON value exactly, or raises :class:`InvalidJson`."""
    if not _depth_ok(text):
        raise InvalidJson("nested deeper than %d" % MAX_DEPTH)
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_float,
            parse_int=_int,
            object_pairs_hook=_no_duplicates,
        )
    except InvalidJson:
        raise
    except (ValueError, RecursionError) as e:
        raise InvalidJson("not well-formed JSON") from e


def check(value: Any, depth: int = 0) -> None:
    """Raises :class:`InvalidJson` unless ``value`` is JSON the host accepts:
    dict (string keys), list, str, bool, None, a finite float, or an int in
    the 64-bit range, nested at most :data:`MAX_DEPTH` deep."""
    if depth > MAX_DEPTH:
        raise InvalidJson("nested deeper than %d" % MAX_DEPTH)
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if not MIN_INT <= value <= MAX_INT:
            raise InvalidJson("integer beyond the 64-bit range")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidJson("non-finite number")
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidJson("object member name that is not a string")
            check(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check(v, depth + 1)
    else:
        raise InvalidJson("not a JSON value: " + type(value).__name__)


def dumps(value: Any) -> str:
    """Writes one checked JSON value as compact RFC 8259 text."""
    check(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def canonical_len(value: Any) -> int:
    """The UTF-8 length of ``value`` with sorted keys, compact: the size the
    host bounds evidence and response extensions by (close to JCS; equal
    for the strings and integers such members hold)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
    return len(text.encode("utf-8"))
