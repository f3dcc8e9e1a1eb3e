"""The official `openai` and `anthropic` SDKs sending given requests, for the
mediation tests (gateway/tests/gateway/apis/mediation.rs).

Usage: members_client.py API BASE_URL REQUEST_JSON...

API is `chat`, `responses` or `messages`; each REQUEST_JSON is the keyword
arguments of one `create` call. One JSON line per request on stdout: the
answer as the SDK parsed it (`result`, its `model_dump`), the events of a
stream as the SDK parsed them (`events`), or the error it raised. Retries
are off, so a refused request is seen once.
"""

import json
import sys

import anthropic
import openai


def call(api, base_url, kwargs):
    stream = kwargs.get("stream", False)
    if api == "messages":
        c = anthropic.Anthropic(base_url=base_url, max_retries=0, timeout=30)
        create = c.messages.create
    else:
        c = openai.OpenAI(base_url=base_url, max_retries=0, timeout=30)
        create = c.chat.completions.create if api == "chat" else c.responses.create
    try:
        answer = create(**kwargs)
        if stream:
            return {"events": [e.model_dump(mode="json") for e in answer]}
        return {"result": answer.model_dump(mode="json")}
    except (openai.APIStatusError, anthropic.APIStatusError) as e:
        return {"error": type(e).__name__, "status": e.status_code, "body": e.body}


def main():
    api, base_url = sys.argv[1], sys.argv[2]
    for request in sys.argv[3:]:
        print(json.dumps(call(api, base_url, json.loads(request))), flush=True)


if __name__ == "__main__":
    main()
