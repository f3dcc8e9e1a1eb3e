//! The mock upstreams of `hookwire_testkit::model_upstream` are faithful to their
//! APIs: each official SDK, pointed directly at its mock, parses what the
//! mock answers as it would a provider's answer — text, tool calls, stop
//! reasons, a streamed answer assembled by the SDK's own stream helper,
//! an error raised as the SDK's own error class; and the raw streams name
//! each event as its type, in the documented order (Responses numbered
//! by `sequence_number`, Messages with its `ping`), which no SDK checks.
//! The gateway's client scenarios (gateway/tests/gateway/apis/) rest on this.

use serde_json::{Value, json};

use hookwire_testkit::model_upstream::clients::{self, Sdk};
use hookwire_testkit::model_upstream::{GREETING, chat, messages, responses};

/// The event types of a stream with each run of one type kept once.
fn runs(events: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events.as_array().expect("events") {
        let e = e.as_str().unwrap().to_owned();
        if out.last() != Some(&e) {
            out.push(e);
        }
    }
    out
}

/// The raw events of one streamed request to `url` (an HTTP/1.0 request,
/// so that the body comes unchunked until the server closes): each
/// event's name and data, in order.
async fn raw_events(url: &str, path: &str, headers: &str, body: &Value) -> Vec<(String, Value)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.0\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the stream ends within 30 s")
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, payload) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    assert!(head.contains("text/event-stream"), "{head}");
    payload
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("named");
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data");
            (name.to_owned(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// Asserts a two-turn tool loop: two calls proposed, both run, the model
/// answered both outputs.
fn assert_loop(out: &Value, first_call: &str) {
    let turns = out["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 2, "{out}");
    let calls = turns[0]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{out}");
    assert_eq!(calls[0]["name"], "bash");
    assert!(calls[0].to_string().contains(first_call), "{out}");
    assert_eq!(out["executed"], json!(["ls", "rm -rf /"]));
    assert_eq!(turns[1]["text"], "done: a.txt\nb.txt | ok", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_upstreams_openai_parses_the_responses_mock_whole_streamed_and_its_errors() {
    let up = responses::serve(responses::conversation).await;
    let chat_up = chat::serve(chat::conversation).await;
    let cases = [
        "text",
        "text-stream",
        "tools",
        "tools-stream",
        "error",
        "error-stream",
        "bearer-less",
        "retrieve",
        "chain",
        "chain-stream",
        "unknown-previous",
    ];
    let (url, chat_url) = (up.url(), chat_up.url());
    let (out, chat_out) = tokio::join!(
        clients::run(Sdk::OpenAi, &url, &cases),
        clients::run(Sdk::OpenAi, &chat_url, &["chat-stream"]),
    );
    let [
        text,
        stream,
        tools,
        tools_stream,
        error,
        error_stream,
        no_key,
        retrieve,
        chain,
        chain_stream,
        unknown_previous,
    ] = <[Value; 11]>::try_from(out).unwrap();

    assert_eq!(text["text"], GREETING, "{text}");
    assert_eq!(text["status"], "completed");
    assert_eq!(text["output_types"], json!(["message"]));

    // The helper read every event and assembled the same answer.
    assert_eq!(stream["text"], GREETING, "{stream}");
    assert_eq!(stream["deltas"], GREETING);
    assert_eq!(stream["status"], "completed");
    assert_eq!(
        runs(&stream["events"]),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );

    assert_loop(&tools, "call_1");
    assert_loop(&tools_stream, "call_1");
    let first = &tools_stream["turns"][0];
    assert_eq!(
        first["output_types"],
        json!(["function_call", "function_call"])
    );
    let events = runs(&first["events"]);
    assert!(
        events.windows(4).any(|w| w
            == [
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
            ]),
        "{events:?}"
    );

    for e in [&error, &error_stream] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["body"]["code"], "rate_limit_exceeded");
    }
    assert_eq!(no_key["error"], "AuthenticationError", "{no_key}");
    assert_eq!(no_key["status"], 401);
    assert_eq!(retrieve["error"], "NotFoundError", "{retrieve}");
    // A stored conversation continued by id: the outputs alone went back.
    assert_loop(&chain, "call_1");
    assert_loop(&chain_stream, "call_1");
    assert_eq!(
        unknown_previous["error"], "NotFoundError",
        "{unknown_previous}"
    );
    assert_eq!(
        unknown_previous["body"]["code"],
        "previous_response_not_found"
    );

    // What the mock recorded: every create, the tool outputs sent back
    // with the calls they answer, the stream flag.
    let seen = up.at(responses::PATH);
    assert_eq!(seen.len(), 14, "{seen:?}");
    let continued = &seen[10].body;
    assert_eq!(continued["previous_response_id"], chain["turns"][0]["id"]);
    assert_eq!(responses::items(continued).len(), 2, "{continued}");
    assert_eq!(seen[0].body["instructions"], "You are terse.");
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-client-own-key");
    assert_eq!(seen[1].body["stream"], true);
    let second_turn = responses::items(&seen[3].body);
    assert!(
        second_turn
            .iter()
            .any(|i| i["type"] == "function_call_output" && i["call_id"] == "call_2"),
        "{second_turn:?}"
    );

    let [chat_stream] = <[Value; 1]>::try_from(chat_out).unwrap();
    assert_eq!(chat_stream["text"], GREETING, "{chat_stream}");
    assert_eq!(chat_stream["finish_reason"], "stop");
    assert!(
        chat_stream["events"]
            .as_array()
            .unwrap()
            .contains(&json!("content.done")),
        "{chat_stream}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_upstreams_anthropic_parses_the_messages_mock_whole_streamed_and_its_errors() {
    let up = messages::serve(messages::conversation).await;
    let cases = [
        "text",
        "text-stream",
        "tools",
        "tools-stream",
        "error",
        "error-stream",
        "no-key",
        "count-tokens",
    ];
    let out = clients::run(Sdk::Anthropic, &up.root(), &cases).await;
    let [
        text,
        stream,
        tools,
        tools_stream,
        error,
        error_stream,
        no_key,
        count,
    ] = <[Value; 8]>::try_from(out).unwrap();

    assert_eq!(text["text"], GREETING, "{text}");
    assert_eq!(text["stop_reason"], "end_turn");
    assert_eq!(text["block_types"], json!(["text"]));

    assert_eq!(stream["text"], GREETING, "{stream}");
    assert_eq!(stream["deltas"], GREETING);
    assert_eq!(stream["stop_reason"], "end_turn");
    // The SDK drops the ping; the rest in the documented order.
    assert_eq!(
        runs(&stream["events"]),
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );

    assert_loop(&tools, "toolu_01");
    assert_loop(&tools_stream, "toolu_01");
    for t in [&tools, &tools_stream] {
        assert_eq!(t["turns"][0]["stop_reason"], "tool_use");
        assert_eq!(
            t["turns"][0]["calls"][1]["input"],
            json!({"cmd": "rm -rf /"})
        );
        assert_eq!(t["turns"][1]["stop_reason"], "end_turn");
    }

    for e in [&error, &error_stream] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["body"]["type"], "error");
        assert_eq!(e["body"]["error"]["type"], "rate_limit_error");
    }
    assert_eq!(no_key["error"], "AuthenticationError", "{no_key}");
    assert_eq!(no_key["body"]["error"]["type"], "authentication_error");
    assert_eq!(count["error"], "NotFoundError", "{count}");
    assert_eq!(count["body"]["error"]["type"], "not_found_error");

    let seen = up.at(messages::PATH);
    assert_eq!(seen.len(), 9, "{seen:?}");
    // The pinned SDK sends its API key as a bearer token.
    for r in &seen[..8] {
        assert_eq!(r.headers["authorization"], "Bearer sk-ant-client-own-key");
        assert!(r.headers.contains_key("anthropic-version"));
    }
    assert_eq!(seen[0].body["system"], "You are terse.");
    assert_eq!(seen[1].body["stream"], true);
    assert!(
        !seen[8].headers.contains_key("authorization"),
        "the no-key case"
    );
    let results = messages::tool_results(&seen[3].body["messages"][2]);
    assert_eq!(results.len(), 2, "{}", seen[3].body);
    assert_eq!(results[0]["tool_use_id"], "toolu_01");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_upstreams_agents_run_a_function_tool_on_both_mocks() {
    let up = responses::serve(responses::conversation).await;
    let chat_up = chat::serve(chat::conversation).await;
    let (url, chat_url) = (up.url(), chat_up.url());
    let (on_responses, on_chat) = tokio::join!(
        clients::run(
            Sdk::Agents,
            &url,
            &["responses", "responses-stream", "responses-error"]
        ),
        clients::run(Sdk::Agents, &chat_url, &["chat", "chat-error"]),
    );
    for out in [&on_responses[0], &on_responses[1], &on_chat[0]] {
        assert_eq!(out["final_output"], "done: a.txt\nb.txt | ok", "{out}");
        assert_eq!(out["executed"], json!(["ls", "rm -rf /"]), "{out}");
        let kinds: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "tool_call_item",
                "tool_call_item",
                "tool_call_output_item",
                "tool_call_output_item",
                "message_output_item"
            ],
            "{out}"
        );
    }
    assert!(
        on_responses[1]["stream_event_types"]
            .as_array()
            .unwrap()
            .contains(&json!("raw_response_event")),
        "{}",
        on_responses[1]
    );
    for e in [&on_responses[2], &on_chat[1]] {
        assert_eq!(e["error"], "RateLimitError", "{e}");
        assert_eq!(e["status"], 429);
        assert_eq!(e["executed"], json!([]));
    }

    // The default model spoke Responses, the other Chat Completions; the
    // function tool was declared to both.
    let seen = up.at(responses::PATH);
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(seen[0].body["tools"][0]["name"], "bash");
    assert_eq!(seen[0].body["instructions"], "You manage files.");
    assert_eq!(seen[2].body["stream"], true);
    let chats = chat_up.chats();
    assert_eq!(chats.len(), 3, "{chats:?}");
    assert_eq!(chats[0].body["tools"][0]["function"]["name"], "bash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_upstreams_the_raw_streams_name_each_event_as_its_type_in_the_documented_order() {
    let up = responses::serve(responses::conversation).await;
    let ask = json!({"model": "test-model", "stream": true, "input": "List the files"});
    let events = raw_events(
        &up.url(),
        "/v1/responses",
        "authorization: Bearer k\r\n",
        &ask,
    )
    .await;
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(&data["type"], name, "each event's name is its type");
        assert_eq!(data["sequence_number"], i, "numbered from 0: {name}");
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names[1], "response.in_progress");
    assert_eq!(names.last(), Some(&"response.completed"));
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][1]["call_id"], "call_2");

    let up = messages::serve(messages::conversation).await;
    let ask = json!({"model": "m", "max_tokens": 16, "stream": true,
                     "messages": [{"role": "user", "content": "hi"}]});
    let headers = "x-api-key: k\r\nanthropic-version: 2023-06-01\r\n";
    let events = raw_events(&up.root(), "/v1/messages", headers, &ask).await;
    for (name, data) in &events {
        assert_eq!(&data["type"], name, "each event's name is its type");
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..3],
        ["message_start", "content_block_start", "ping"],
        "{names:?}"
    );
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert!(
        names[3..names.len() - 3]
            .iter()
            .all(|n| *n == "content_block_delta")
    );
    assert_eq!(
        events[names.len() - 2].1["delta"]["stop_reason"],
        "end_turn"
    );
}
