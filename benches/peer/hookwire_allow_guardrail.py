"""The LiteLLM side of the load bench's `gateway_peer` section.

A custom guardrail doing what the hookwire allow interceptor does at the
gateway's points: it inspects the request before the model call
(`pre_call`) and the answer after it (`post_call`, whole or streamed), and
allows. Streamed answers are held until the stream ends and inspected
whole, as the gateway's default (buffered) posture does.

One marker per hook makes it deny instead, so that the bench can check,
before it measures anything, that both hooks really run on every route it
measures: a request carrying `DENY_INPUT` is refused before the model call,
and an answer carrying `DENY_OUTPUT` (the bench's mock upstream answers
with it when asked to) is refused after it.
"""

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks

DENY_INPUT = "hookwire-peer-deny-input"
DENY_OUTPUT = "hookwire-peer-deny-output"

# Bounds on what one inspection walks: nesting depth, strings collected,
# and chunks of one streamed answer held.
MAX_DEPTH = 32
MAX_STRINGS = 4096
MAX_CHUNKS = 65536

# The request members that carry what the model reads, per API: Chat
# Completions `messages`, Responses `input`/`instructions`, Messages
# `messages`/`system`.
REQUEST_MEMBERS = ("messages", "input", "instructions", "system")


def _strings(value, out, depth=0):
    """Appends every string under `value` to `out`, bounded."""
    if depth > MAX_DEPTH or len(out) >= MAX_STRINGS:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (bytes, bytearray)):
        out.append(bytes(value).decode("utf-8", "replace"))
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out, depth + 1)
    elif hasattr(value, "model_dump"):
        _strings(value.model_dump(), out, depth + 1)


def _contains(value, marker):
    found = []
    _strings(value, found)
    return any(marker in s for s in found)


class HookwireAllowGuardrail(CustomGuardrail):
    """Inspects and allows at `pre_call` and `post_call`."""

    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        if not self.should_run_guardrail(data=data, event_type=GuardrailEventHooks.pre_call):
            return data
        request = {k: data.get(k) for k in REQUEST_MEMBERS if k in data}
        if _contains(request, DENY_INPUT):
            raise ValueError("hookwire peer guardrail: input denied")
        return data

    async def async_post_call_success_hook(self, data, user_api_key_dict, response):
        if not self.should_run_guardrail(data=data, event_type=GuardrailEventHooks.post_call):
            return response
        if _contains(response, DENY_OUTPUT):
            raise ValueError("hookwire peer guardrail: output denied")
        return response

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        if not self.should_run_guardrail(data=request_data, event_type=GuardrailEventHooks.post_call):
            async for chunk in response:
                yield chunk
            return
        held = []
        async for chunk in response:
            if len(held) >= MAX_CHUNKS:
                raise ValueError("hookwire peer guardrail: streamed answer too long")
            held.append(chunk)
        if _contains(held, DENY_OUTPUT):
            raise ValueError("hookwire peer guardrail: output denied")
        for chunk in held:
            yield chunk
