//! Stream assembly over realistic event sequences, and the events the
//! writer produces read back by the assembler.

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use super::response::decode;
use crate::api::messages::{MessagesAssembler, MessagesResponse, MessagesWriter};
use crate::api::model::{ApiResponse, EventAssembler, EventWriter, Finish, Settled};
use crate::error::Error;
use crate::sse::{SseEvent, SseParser};

fn ev(v: Value) -> String {
    match v["type"].as_str() {
        Some(name) => format!("event: {name}\ndata: {v}\n\n"),
        None => format!("data: {v}\n\n"),
    }
}

/// A stream as the API sends it: thinking, text, a tool call whose input
/// comes in pieces, pings between.
fn upstream() -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Two files "}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "to read."}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": "Reading "}}),
        json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "text_delta", "text": "both. é"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ];
    events.into_iter().map(ev).collect()
}

/// The message `upstream()` amounts to.
fn assembled() -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Two files to read.", "signature": "EqQB"},
            {"type": "text", "text": "Reading both. é"},
            {"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 40},
    })
}

/// Feeds `bytes` in the given pieces; the assembler and the text it
/// returned.
fn assemble(pieces: &[&[u8]]) -> Result<(MessagesAssembler, String), String> {
    let mut parser = SseParser::default();
    let mut a = MessagesAssembler::default();
    let mut text = String::new();
    for piece in pieces {
        for event in parser.feed(piece)? {
            text.push_str(&a.add(&event)?);
        }
    }
    Ok((a, text))
}

fn whole(bytes: &[u8]) -> MessagesAssembler {
    let (a, _) = assemble(&[bytes]).unwrap();
    assert!(a.is_done());
    a
}

#[test]
fn a_stream_split_anywhere_assembles_to_the_whole_message() {
    let stream = upstream();
    let bytes = stream.as_bytes();
    let expected = decode(&assembled());
    for cut in 0..=bytes.len() {
        let (a, text) = assemble(&[&bytes[..cut], &bytes[cut..]]).unwrap();
        assert!(a.is_done(), "cut at {cut}");
        assert_eq!(text, "Reading both. é");
        assert_eq!(a.finish().unwrap(), expected, "cut at {cut}");
    }
    for size in 1..=23 {
        let pieces: Vec<&[u8]> = bytes.chunks(size).collect();
        let (a, _) = assemble(&pieces).unwrap();
        assert_eq!(a.finish().unwrap(), expected, "pieces of {size}");
    }
}

#[test]
fn a_stream_that_stops_short_does_not_finish() {
    let stream = upstream();
    let before_delta = stream.find("event: message_delta").unwrap();
    let (a, _) = assemble(&[&stream.as_bytes()[..before_delta]]).unwrap();
    assert!(!a.is_done());
    assert!(a.finish().unwrap_err().contains("stop_reason"));
    let mid_block = stream.find("event: content_block_stop").unwrap();
    let (a, _) = assemble(&[&stream.as_bytes()[..mid_block]]).unwrap();
    assert!(a.finish().unwrap_err().contains("open"));
    assert!(MessagesAssembler::default().finish().is_err());
}

fn settled_cases() -> Vec<Settled> {
    vec![
        Settled {
            text: "Reading both. é".into(),
            tool_calls: vec![
                ToolCall::new("toolu_1", "cat", json!({"path": "a"})),
                ToolCall::new("toolu_2", "list", json!({})),
            ],
            finish: Finish::ToolCalls,
            rewritten: false,
        },
        Settled {
            text: "Reading both. é\n[hookwire] tool call \"cat\" (toolu_1) was blocked: no".into(),
            tool_calls: vec![ToolCall::new("toolu_2", "list", json!({"all": true}))],
            finish: Finish::ToolCalls,
            rewritten: false,
        },
        Settled {
            text: "[hookwire] blocked".into(),
            tool_calls: vec![],
            finish: Finish::Stop,
            rewritten: false,
        },
        Settled {
            text: "[hookwire] the response was withheld: pii".into(),
            tool_calls: vec![],
            finish: Finish::Withheld,
            rewritten: false,
        },
        Settled {
            text: String::new(),
            tool_calls: vec![],
            finish: Finish::Upstream("pause_turn".into()),
            rewritten: false,
        },
    ]
}

/// The events, read back: the whole message they amount to.
fn read_back(events: &[bytes::Bytes]) -> MessagesResponse {
    let joined: Vec<u8> = events.iter().flat_map(|b| b.to_vec()).collect();
    whole(&joined).finish().unwrap()
}

/// A settled message, as a response to compare with.
fn response(settled: Value) -> MessagesResponse {
    MessagesResponse::from_message(settled.as_object().unwrap().clone()).unwrap()
}

#[test]
fn the_replayed_stream_reads_back_as_the_settled_answer() {
    let seen = whole(upstream().as_bytes());
    for settled in settled_cases() {
        let events = MessagesWriter::replay(&seen, &settled);
        let expected = seen.finish().unwrap().settle(&settled);
        assert_eq!(read_back(&events), response(expected), "{settled:?}");
    }
}

#[test]
fn the_replayed_stream_is_the_documented_sequence() {
    let seen = whole(upstream().as_bytes());
    let events = MessagesWriter::replay(&seen, &settled_cases()[1]);
    let joined: Vec<u8> = events.iter().flat_map(|b| b.to_vec()).collect();
    let parsed: Vec<SseEvent> = SseParser::default().feed(&joined).unwrap();
    let names: Vec<&str> = parsed.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let data: Vec<Value> = parsed.iter().map(|e| e.json().unwrap()).collect();
    assert_eq!(data[0]["message"]["id"], "msg_01");
    assert_eq!(data[0]["message"]["content"], json!([]));
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 12);
    let indexes: Vec<u64> = data[1..9]
        .iter()
        .map(|d| d["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indexes, [0, 0, 1, 1, 1, 2, 2, 2]);
    assert_eq!(
        data[6]["content_block"],
        json!({"type": "tool_use", "id": "toolu_2", "name": "list", "input": {}})
    );
    assert_eq!(
        data[7]["delta"],
        json!({"type": "input_json_delta", "partial_json": "{\"all\":true}"})
    );
    assert_eq!(data[9]["delta"]["stop_reason"], "tool_use");
    assert_eq!(data[9]["usage"], json!({"output_tokens": 40}));
}

#[test]
fn an_incremental_stream_reads_back_as_the_settled_answer() {
    let stream = upstream();
    let first_text = stream.find("both. é").unwrap();
    let cut = stream[..first_text].rfind("event:").unwrap();
    let (seen_early, _) = assemble(&[&stream.as_bytes()[..cut]]).unwrap();
    let seen = whole(stream.as_bytes());
    for settled in settled_cases() {
        let mut w = MessagesWriter::new(&seen_early);
        let mut events = w.opening();
        if !settled.text.is_empty() {
            let (a, b) = settled.text.split_at(3);
            events.push(w.text(a));
            events.push(w.text(b));
        }
        events.extend(w.closing(&seen, &settled));
        let expected = seen.finish().unwrap().settle(&settled);
        if settled.finish == Finish::Withheld {
            // The thinking had gone out before the verdict.
            let got = read_back(&events);
            assert_eq!(got.blocks()[1], expected["content"][0]);
            assert_eq!(got.blocks().len(), 2);
            assert_eq!(got.stop_reason(), Some("refusal"));
        } else {
            assert_eq!(read_back(&events), response(expected), "{settled:?}");
        }
    }
}

#[test]
fn the_error_event_carries_the_anthropic_error_body() {
    let e = MessagesWriter::error(&Error::Upstream("reset".into()));
    let text = std::str::from_utf8(&e).unwrap();
    assert!(text.starts_with("event: error\ndata: "), "{text}");
    let parsed = SseParser::default().feed(&e).unwrap();
    assert_eq!(
        parsed[0].json().unwrap(),
        json!({"type": "error", "error": {"type": "api_error",
               "message": "upstream unavailable: reset"}})
    );
}

fn refusal(events: &[Value]) -> String {
    let stream: String = events.iter().cloned().map(ev).collect();
    match assemble(&[stream.as_bytes()]) {
        Err(e) => e,
        Ok((a, _)) => a
            .finish()
            .map(|_| "finished".to_owned())
            .unwrap_or_else(|e| e),
    }
}

#[test]
fn malformed_streams_are_refused() {
    let start = json!({"type": "message_start", "message": {"id": "m", "type": "message",
        "role": "assistant", "model": "x", "content": [], "usage": {}}});
    let text_start = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}});
    let tool_start = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "t", "name": "x", "input": {}}});
    let delta = |d: Value| json!({"type": "content_block_delta", "index": 0, "delta": d});
    let stop = json!({"type": "content_block_stop", "index": 0});
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (vec![text_start.clone()], "before message_start"),
        (vec![start.clone(), start.clone()], "a second message_start"),
        (
            vec![
                start.clone(),
                json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}}),
            ],
            "expected 0",
        ),
        (vec![start.clone(), stop.clone()], "not open"),
        (
            vec![
                start.clone(),
                text_start.clone(),
                stop.clone(),
                delta(json!({"type": "text_delta", "text": "x"})),
            ],
            "not open",
        ),
        (
            vec![
                start.clone(),
                text_start.clone(),
                delta(json!({"type": "input_json_delta", "partial_json": "{"})),
            ],
            "a input_json_delta for a text block",
        ),
        (
            vec![
                start.clone(),
                text_start.clone(),
                delta(json!({"type": "brand_new_delta"})),
            ],
            "unknown content block delta",
        ),
        (
            vec![
                start.clone(),
                tool_start.clone(),
                delta(json!({"type": "input_json_delta", "partial_json": "{\"a\""})),
                stop.clone(),
            ],
            "not JSON",
        ),
        (
            vec![
                start.clone(),
                tool_start.clone(),
                delta(json!({"type": "input_json_delta", "partial_json": "[1]"})),
                stop.clone(),
            ],
            "not an object",
        ),
        (
            vec![
                start.clone(),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ],
            "overloaded_error: Overloaded",
        ),
        (
            vec![
                start.clone(),
                text_start.clone(),
                json!({"type": "message_stop"}),
            ],
            "open",
        ),
        (
            vec![
                start.clone(),
                json!({"type": "message_stop"}),
                text_start.clone(),
            ],
            "after message_stop",
        ),
        (
            vec![start.clone(), json!({"type": "message_delta", "delta": 1})],
            "no delta",
        ),
        (vec![json!({"no": "type"})], "no type"),
    ];
    for (events, expected) in cases {
        let got = refusal(&events);
        assert!(got.contains(expected), "{got:?} lacks {expected:?}");
    }
    let mislabelled = format!("event: message_stop\ndata: {start}\n\n");
    let err = assemble(&[mislabelled.as_bytes()]).err().unwrap();
    assert!(err.contains("carries"), "{err}");
}

#[test]
fn too_many_tool_calls_or_blocks_are_refused() {
    let mut events = vec![json!({"type": "message_start", "message": {"id": "m",
        "content": [], "usage": {}}})];
    for i in 0..=crate::bounds::MAX_TOOL_CALLS {
        events.push(json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": "x", "input": {}}}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    assert!(refusal(&events).contains("more than 128 tool calls"));
    let mut events = vec![events[0].clone()];
    for i in 0..=crate::api::messages::blocks::MAX_BLOCKS {
        events.push(json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "redacted_thinking", "data": "x"}}));
        events.push(json!({"type": "content_block_stop", "index": i}));
    }
    assert!(refusal(&events).contains("more than 1024 content blocks"));
}

#[test]
fn unknown_event_types_are_skipped() {
    let stream = upstream().replace(
        "event: ping\ndata: {\"type\":\"ping\"}",
        "event: future_event\ndata: {\"type\":\"future_event\",\"x\":1}",
    );
    assert!(stream.contains("future_event"));
    let a = whole(stream.as_bytes());
    assert_eq!(a.finish().unwrap(), decode(&assembled()));
}

#[test]
fn a_message_delta_cannot_replace_the_content_or_the_usage() {
    let stream = upstream().replace(
        "\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null}",
        "\"delta\":{\"content\":[],\"usage\":{},\"stop_reason\":\"tool_use\",\"stop_sequence\":null}",
    );
    assert!(stream.contains("\"content\":[],\"usage\":{}"));
    let a = whole(stream.as_bytes());
    assert_eq!(a.finish().unwrap(), decode(&assembled()));
}

/// Fuzz finding (`messages_stream`): a `stop_sequence` said only in
/// `message_start` was kept by the assembled message but dropped by the
/// written `message_delta`, so the two readings of one answer differed.
#[test]
fn a_stop_sequence_said_only_at_the_start_is_kept_by_both_readings() {
    let stream = upstream()
        .replace(
            "\"stop_reason\":null,\"stop_sequence\":null",
            "\"stop_reason\":null,\"stop_sequence\":\"END\"",
        )
        .replace(
            "\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null}",
            "\"delta\":{\"stop_reason\":\"stop_sequence\"}",
        );
    assert!(stream.contains("\"stop_sequence\":\"END\""));
    let seen = whole(stream.as_bytes());
    for settled in settled_cases() {
        let events = MessagesWriter::replay(&seen, &settled);
        let expected = seen.finish().unwrap().settle(&settled);
        assert_eq!(read_back(&events), response(expected), "{settled:?}");
    }
}
