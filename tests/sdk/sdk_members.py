"""The members of each wire API as the pinned official SDKs type them, for the
mediation-table test (gateway/tests/gateway/mediation_table.rs).

Prints one line per member path, sorted: `API request PATH` or
`API answer PATH`. Paths: a top-level member by name; `choices[].NAME`,
`choices[].message.NAME` for a Chat answer; `output[type=T]` for each
Responses output item type; `content[type=T]` for each Messages content
block type; `messages[].content[type=T]` for each Messages request block
type and each Chat content part type. The walk is bounded: it reads only
these type definitions, never recursing further.
"""

import typing

from anthropic.types import Message, MessageCreateParams, ContentBlock, ContentBlockParam
from anthropic.types.beta import BetaMessage, BetaContentBlock, BetaContentBlockParam
from anthropic.types.beta import message_create_params as beta_params
from openai.types.chat import ChatCompletion, ChatCompletionContentPartParam
from openai.types.chat import completion_create_params as chat_params
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message import ChatCompletionMessage
from openai.types.responses import Response, ResponseOutputItem
from openai.types.responses import response_create_params as responses_params


def typed_dict_keys(td):
    return set(td.__required_keys__) | set(td.__optional_keys__)


def union_members(t):
    """The classes of a (possibly Annotated, possibly nested) union."""
    out = []
    stack = [t]
    while stack:
        t = stack.pop()
        origin = typing.get_origin(t)
        if origin is typing.Annotated:
            stack.append(typing.get_args(t)[0])
        elif origin is typing.Union or str(origin) == "types.UnionType":
            stack.extend(typing.get_args(t))
        elif isinstance(t, type):
            out.append(t)
    return out


def literal_values(t):
    """The values of a Literal, through Required/NotRequired/Optional."""
    origin = typing.get_origin(t)
    if origin is typing.Literal:
        return list(typing.get_args(t))
    vals = []
    for a in typing.get_args(t):
        vals.extend(literal_values(a))
    return vals


def type_tags(union):
    tags = set()
    for cls in union_members(union):
        if hasattr(cls, "model_fields") and "type" in cls.model_fields:
            tags.update(literal_values(cls.model_fields["type"].annotation))
        else:
            hints = typing.get_type_hints(cls, include_extras=True)
            if "type" in hints:
                tags.update(literal_values(hints["type"]))
    return tags


def fields(model):
    return set(model.model_fields.keys())


def main():
    lines = set()

    def add(api, side, paths):
        for p in paths:
            lines.add(f"{api} {side} {p}")

    add("chat_completions", "request", typed_dict_keys(chat_params.CompletionCreateParamsNonStreaming)
        | typed_dict_keys(chat_params.CompletionCreateParamsStreaming))
    add("chat_completions", "request",
        {f"messages[].content[type={t}]" for t in type_tags(ChatCompletionContentPartParam)})
    add("chat_completions", "answer", fields(ChatCompletion))
    add("chat_completions", "answer", {f"choices[].{f}" for f in fields(Choice)})
    add("chat_completions", "answer", {f"choices[].message.{f}" for f in fields(ChatCompletionMessage)})

    add("responses", "request", typed_dict_keys(responses_params.ResponseCreateParamsNonStreaming)
        | typed_dict_keys(responses_params.ResponseCreateParamsStreaming))
    add("responses", "answer", fields(Response))
    add("responses", "answer", {f"output[type={t}]" for t in type_tags(ResponseOutputItem)})

    for td in union_members(MessageCreateParams) + union_members(beta_params.MessageCreateParams):
        add("messages", "request", typed_dict_keys(td))
    add("messages", "request",
        {f"messages[].content[type={t}]" for t in type_tags(ContentBlockParam) | type_tags(BetaContentBlockParam)})
    add("messages", "answer", fields(Message) | fields(BetaMessage))
    add("messages", "answer",
        {f"content[type={t}]" for t in type_tags(ContentBlock) | type_tags(BetaContentBlock)})

    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    main()
