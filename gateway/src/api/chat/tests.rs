//! The Chat Completions adapter's pure parts: request checks, entries,
//! rewrites of strings and part arrays, whole settles, stream assembly
//! and the events written back.

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use super::*;
use crate::api::model::{ApiResponse, EventAssembler, EventWriter, Finish, Settled, Text};
use crate::bounds::MAX_TOOL_CALLS;
use crate::sse::{SseEvent, SseParser};

fn decode(v: Value) -> Result<ChatRequest, Error> {
    Chat::decode_request(v.to_string().as_bytes())
}

fn refused(v: Value) -> String {
    match decode(v) {
        Err(Error::BadRequest(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn requests_the_gateway_cannot_govern_are_refused_with_a_reason() {
    let msg = json!([{"role": "user", "content": "hi"}]);
    assert!(refused(json!({"messages": msg})).contains("model"));
    assert!(refused(json!({"model": "m", "messages": []})).contains("empty"));
    assert!(refused(json!({"model": "m", "messages": "x"})).contains("array"));
    assert!(refused(json!({"model": "m", "messages": [{"content": "x"}]})).contains("role"));
    assert!(refused(json!({"model": "m", "messages": msg, "n": 2})).contains("n must be 1"));
    assert!(decode(json!({"model": "m", "messages": msg, "n": 1})).is_ok());
    let many = vec![json!({"role": "user", "content": "x"}); MAX_MESSAGES + 1];
    assert!(refused(json!({"model": "m", "messages": many})).contains("too many messages"));
    let tools = vec![json!({"type": "function", "function": {"name": "t"}}); MAX_TOOLS + 1];
    assert!(refused(json!({"model": "m", "messages": msg, "tools": tools})).contains("tools"));
    let parts = vec![json!({"type": "text", "text": "x"}); MAX_PARTS + 1];
    let m = refused(json!({"model": "m", "messages": [{"role": "user", "content": parts}]}));
    assert!(m.starts_with("messages[0]") && m.contains("parts"), "{m}");
    let m = refused(json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}));
    assert!(m.contains("tool_call_id"), "{m}");
    assert_eq!(
        refused(json!("not an object")),
        "the body is not a JSON object"
    );
}

#[test]
fn messages_map_one_to_one_onto_entries() {
    let r = decode(json!({
        "model": "gpt", "stream": true,
        "tools": [{"type": "function", "function": {"name": "ls"}},
                  {"type": "function", "function": {"name": "cat"}},
                  {"type": "function", "function": {"name": "ls"}}],
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [
                {"type": "text", "text": "look at "},
                {"type": "image_url", "image_url": {"url": "data:x"}},
                {"type": "text", "text": "this"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":1}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "critic", "content": "x"}
        ]}))
    .unwrap();
    let v = r.view();
    assert_eq!((v.model.as_str(), v.stream), ("gpt", true));
    assert_eq!(v.tools, ["cat", "ls"]);
    assert_eq!(
        v.entries,
        [
            Entry::Instructions(Text {
                text: "be brief".into(),
                other_parts: vec![]
            }),
            Entry::User(Text {
                text: "look at this".into(),
                other_parts: vec!["image_url".into()]
            }),
            Entry::Assistant {
                text: Text::default(),
                tool_calls: vec![ToolCall::new("c1", "ls", json!({"p": 1}))]
            },
            Entry::ToolResult {
                call_id: "c1".into(),
                result: json!("a.txt"),
                is_error: false
            },
            Entry::Other("critic".into()),
        ]
    );
}

#[test]
fn a_rewrite_replaces_the_text_parts_where_the_first_was() {
    let mut r = decode(json!({"model": "m", "messages": [
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "u"}},
            {"type": "text", "text": "alice@x"},
            {"type": "input_audio", "input_audio": {}},
            {"type": "text", "text": " hi"}]},
        {"role": "user", "content": "bob@x"},
        {"role": "tool", "tool_call_id": "c", "content": "secret"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "v"}}]}
    ]}))
    .unwrap();
    r.rewrite(0, Rewrite::Text("[email] hi".into())).unwrap();
    r.rewrite(1, Rewrite::Text("[email]".into())).unwrap();
    r.rewrite(
        2,
        Rewrite::ToolResult {
            text: "blocked".into(),
            is_error: true,
        },
    )
    .unwrap();
    r.rewrite(3, Rewrite::Text("caption".into())).unwrap();
    assert!(
        r.rewrite(
            1,
            Rewrite::ToolResult {
                text: "x".into(),
                is_error: false
            }
        )
        .is_err()
    );
    assert!(r.rewrite(9, Rewrite::Text("x".into())).is_err());
    let body = r.into_body();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "u"}},
                {"type": "text", "text": "[email] hi"},
                {"type": "input_audio", "input_audio": {}}]},
            {"role": "user", "content": "[email]"},
            {"role": "tool", "tool_call_id": "c", "content": "blocked"},
            {"role": "user", "content": [
                {"type": "text", "text": "caption"},
                {"type": "image_url", "image_url": {"url": "v"}}]}
        ])
    );
    assert_eq!(body["model"], "m");
}

fn answer(message: Value, finish: &str) -> ChatResponse {
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"total_tokens": 3}});
    Chat::decode_response(body.to_string().as_bytes()).unwrap()
}

#[test]
fn a_whole_answer_reads_neutrally_and_settles_to_what_was_released() {
    let r = answer(
        json!({"role": "assistant", "content": "ok", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "rm", "arguments": "{\"f\":1}"}}]}),
        "tool_calls",
    );
    let n = r.answer().unwrap();
    assert_eq!(n.content, json!("ok"));
    assert_eq!(n.tool_calls.len(), 2);
    assert_eq!(n.finish_reason, "tool_calls");
    let out = r.clone().settle(&Settled {
        text: "ok\n[hookwire] blocked".into(),
        tool_calls: vec![ToolCall::new("a", "ls", json!({"safe": true}))],
        finish: Finish::ToolCalls,
        rewritten: false,
    });
    assert_eq!(
        out["choices"][0]["message"]["content"],
        "ok\n[hookwire] blocked"
    );
    assert_eq!(
        out["choices"][0]["message"]["tool_calls"],
        json!([{"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{\"safe\":true}"}}])
    );
    assert_eq!(out["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        out["usage"],
        json!({"total_tokens": 3}),
        "the rest passes through"
    );
    let withheld = r.settle(&Settled {
        text: "[hookwire] the response was withheld: x".into(),
        tool_calls: vec![],
        finish: Finish::Withheld,
        rewritten: false,
    });
    assert_eq!(withheld["choices"][0]["finish_reason"], "content_filter");
    assert!(
        withheld["choices"][0]["message"]
            .get("tool_calls")
            .is_none()
    );
    assert!(Chat::decode_response(b"{\"choices\": []}").is_err());
    assert!(Chat::decode_response(b"nope").is_err());
}

const STREAM: &[u8] = b"data: {\"id\":\"c1\",\"created\":5,\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"total_tokens\":9}}\n\ndata: [DONE]\n\n";

fn assemble(bytes: &[u8], split: usize) -> (ChatAssembler, String) {
    let mut p = SseParser::default();
    let mut a = ChatAssembler::default();
    let mut text = String::new();
    for chunk in [&bytes[..split], &bytes[split..]] {
        for e in p.feed(chunk).unwrap() {
            text.push_str(&a.add(&e).unwrap());
        }
    }
    (a, text)
}

#[test]
fn a_stream_split_anywhere_assembles_to_the_same_answer() {
    for split in [
        0,
        1,
        17,
        80,
        STREAM.len() / 2,
        STREAM.len() - 3,
        STREAM.len(),
    ] {
        let (a, text) = assemble(STREAM, split);
        assert_eq!(text, "Hello", "split at {split}");
        assert!(a.is_done());
        let r = a.finish().unwrap();
        let n = r.answer().unwrap();
        assert_eq!(n.content, json!("Hello"));
        assert_eq!(n.tool_calls, [ToolCall::new("t", "ls", json!({"a": 1}))]);
        assert_eq!(n.finish_reason, "tool_calls");
    }
    let (cut, _) = assemble(&STREAM[..120], 60);
    assert!(!cut.is_done());
    assert!(cut.finish().is_err(), "no finish reason yet");
    let mut a = ChatAssembler::default();
    let many: Vec<Value> = (0..=MAX_TOOL_CALLS)
        .map(|i| json!({"index": i, "id": format!("c{i}")}))
        .collect();
    let e = crate::sse::SseEvent {
        name: None,
        data: json!({"choices": [{"delta": {"tool_calls": many}}]}).to_string(),
    };
    assert!(a.add(&e).is_err());
    let not_json = crate::sse::SseEvent {
        name: None,
        data: "{".into(),
    };
    assert!(ChatAssembler::default().add(&not_json).is_err());
}

#[test]
fn the_events_written_back_reassemble_to_the_settled_answer() {
    let (seen, _) = assemble(STREAM, 10);
    let settled = Settled {
        text: "Hello\n[hookwire] tool call \"rm\" (x) was blocked: no".into(),
        tool_calls: vec![ToolCall::new("t", "ls", json!({"a": 2}))],
        finish: Finish::ToolCalls,
        rewritten: false,
    };
    let events = ChatWriter::replay(&seen, &settled);
    let bytes: Vec<u8> = events.iter().flat_map(|b| b.to_vec()).collect();
    let (again, text) = assemble(&bytes, 7);
    assert_eq!(text, settled.text);
    assert!(again.is_done());
    let r = again.finish().unwrap();
    let whole = r.clone().settle(&settled);
    assert_eq!(whole["id"], "c1");
    assert_eq!(whole["usage"], json!({"total_tokens": 9}));
    let n = r.answer().unwrap();
    assert_eq!(n.tool_calls, settled.tool_calls);
    assert_eq!(n.finish_reason, "tool_calls");
    let err = String::from_utf8(ChatWriter::error(&Error::Upstream("x".into())).to_vec()).unwrap();
    assert!(err.starts_with("data: {\"error\""), "{err}");
}

#[test]
fn a_streamed_tool_call_answer_settles_like_a_whole_one() {
    let stream = b"data: {\"id\":\"c2\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let (seen, text) = assemble(stream, 9);
    assert_eq!(text, "");
    let r = seen.finish().unwrap();
    assert_eq!(
        r.to_value()["choices"][0]["message"]["content"],
        Value::Null
    );
    let n = r.answer().unwrap();
    assert_eq!(n.content, Value::Null, "no text, as in a whole answer");
    let settled = Settled {
        text: String::new(),
        tool_calls: n.tool_calls,
        finish: Finish::ToolCalls,
        rewritten: false,
    };
    let bytes: Vec<u8> = ChatWriter::replay(&seen, &settled).concat();
    let (again, _) = assemble(&bytes, 5);
    assert_eq!(
        again.finish().unwrap().to_value(),
        &r.settle(&settled),
        "the chunks written back are the settled answer"
    );
}

#[test]
fn a_stream_that_skips_a_tool_call_index_is_refused() {
    let mut a = ChatAssembler::default();
    for chunk in [
        json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "t1", "function": {"name": "ls", "arguments": "{}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ] {
        let event = SseEvent {
            name: None,
            data: chunk.to_string(),
        };
        a.add(&event).unwrap();
    }
    let refused = a.finish().unwrap_err();
    assert!(refused.contains("tool call 0"), "{refused}");
}
