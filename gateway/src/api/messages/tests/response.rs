//! Whole answers: their neutral reading and their settling.

use hookwire_client::ToolCall;
use serde_json::{Value, json};

use crate::api::messages::{Messages, MessagesResponse};
use crate::api::model::{Api, ApiResponse, Finish, Settled};
use crate::error::Error;

/// A message as the API answers it: thinking, text, two calls.
pub(super) fn message() -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Two files to read.", "signature": "EqQB"},
            {"type": "text", "text": "Reading "},
            {"type": "text", "text": "both."},
            {"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "rm", "input": {"path": "/"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 40},
    })
}

pub(super) fn decode(v: &Value) -> MessagesResponse {
    Messages::decode_response(v.to_string().as_bytes()).unwrap()
}

#[test]
fn the_answer_is_the_text_the_calls_and_a_neutral_finish() {
    let r = decode(&message());
    let answer = r.answer().unwrap();
    assert_eq!(answer.content, json!("Reading both."));
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall::new("toolu_1", "cat", json!({"path": "a"})),
            ToolCall::new("toolu_2", "rm", json!({"path": "/"})),
        ]
    );
    assert_eq!(answer.finish_reason, "tool_calls");
    assert_eq!(r.other_outputs(), ["thinking"]);
    assert_eq!(r.id(), None);

    for (upstream, neutral) in [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("pause_turn", "pause_turn"),
        ("refusal", "refusal"),
    ] {
        let mut m = message();
        m["stop_reason"] = json!(upstream);
        m["content"] =
            json!([{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]);
        let r = decode(&m);
        let answer = r.answer().unwrap();
        assert_eq!(answer.finish_reason, neutral);
        assert_eq!(answer.content, Value::Null);
        assert!(answer.tool_calls.is_empty());
        assert_eq!(r.other_outputs(), ["server_tool_use"]);
    }
}

#[test]
fn a_settled_answer_keeps_thinking_and_only_the_permitted_calls() {
    let settled = Settled {
        text: "Reading both.\n[hookwire] tool call \"rm\" (toolu_2) was blocked: destructive"
            .into(),
        tool_calls: vec![ToolCall::new("toolu_1", "cat", json!({"path": "a.txt"}))],
        finish: Finish::ToolCalls,
        rewritten: false,
    };
    let out = decode(&message()).settle(&settled);
    let mut expected = message();
    expected["content"] = json!([
        {"type": "thinking", "thinking": "Two files to read.", "signature": "EqQB"},
        {"type": "text", "text": settled.text},
        {"type": "tool_use", "id": "toolu_1", "name": "cat", "input": {"path": "a.txt"}},
    ]);
    assert_eq!(out, expected);
}

#[test]
fn an_answer_with_every_call_blocked_ends_its_turn() {
    let mut m = message();
    m["content"] = json!([
        {"type": "tool_use", "id": "toolu_2", "name": "rm", "input": {"path": "/"}},
        {"type": "web_search_tool_result", "tool_use_id": "s", "content": []},
    ]);
    let settled = Settled {
        text: "[hookwire] blocked".into(),
        tool_calls: vec![],
        finish: Finish::Stop,
        rewritten: false,
    };
    let out = decode(&m).settle(&settled);
    assert_eq!(
        out["content"],
        json!([
            {"type": "text", "text": "[hookwire] blocked"},
            {"type": "web_search_tool_result", "tool_use_id": "s", "content": []},
        ])
    );
    assert_eq!(out["stop_reason"], "end_turn");
    assert_eq!(out["usage"], message()["usage"]);
}

#[test]
fn a_withheld_answer_is_its_notice_alone_with_the_refusal_stop_reason() {
    let settled = Settled {
        text: "[hookwire] the response was withheld: pii".into(),
        tool_calls: vec![],
        finish: Finish::Withheld,
        rewritten: false,
    };
    let out = decode(&message()).settle(&settled);
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "[hookwire] the response was withheld: pii"}])
    );
    assert_eq!(out["stop_reason"], "refusal");
    assert_eq!(out["id"], "msg_01");
}

#[test]
fn a_stop_sequence_stays_while_the_answer_stops_there() {
    let mut m = message();
    m["content"] = json!([{"type": "text", "text": "one two"}]);
    m["stop_reason"] = json!("stop_sequence");
    m["stop_sequence"] = json!("END");
    let settle = |finish, text: &str| {
        decode(&m).settle(&Settled {
            text: text.into(),
            tool_calls: vec![],
            finish,
            rewritten: false,
        })
    };
    let out = settle(Finish::Stop, "one [number]");
    assert_eq!(out["stop_reason"], "stop_sequence");
    assert_eq!(out["stop_sequence"], "END");
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "one [number]"}])
    );
    let out = settle(Finish::Length, "");
    assert_eq!(out["stop_reason"], "max_tokens");
    assert_eq!(out["stop_sequence"], Value::Null);
    assert_eq!(out["content"], json!([]));
}

#[test]
fn unusable_answers_are_refused() {
    let with = |f: &dyn Fn(&mut Value)| {
        let mut m = message();
        f(&mut m);
        Messages::decode_response(m.to_string().as_bytes())
    };
    let cases: Vec<(Result<MessagesResponse, Error>, &str)> = vec![
        (Messages::decode_response(b"[]"), "not a JSON object"),
        (with(&|m| m["content"] = json!("hi")), "no content array"),
        (with(&|m| m["stop_reason"] = Value::Null), "no stop_reason"),
        (
            with(&|m| m["content"] = json!([{"type": "tool_use", "id": "t", "name": "x"}])),
            "content[0].input must be an object",
        ),
        (
            with(&|m| m["content"] = json!([{"type": "text"}])),
            "text block without text",
        ),
        (
            with(&|m| {
                m["content"] = Value::Array(vec![
                    json!({"type": "tool_use", "id": "t", "name": "x", "input": {}});
                    crate::bounds::MAX_TOOL_CALLS + 1
                ])
            }),
            "more than 128 tool calls",
        ),
    ];
    for (result, expected) in cases {
        match result {
            Err(Error::UpstreamResponse(m)) => assert!(m.contains(expected), "{m:?}"),
            other => panic!("expected {expected:?}, got {other:?}"),
        }
    }
}

#[test]
fn a_rewritten_answer_keeps_no_thinking_with_the_text_it_replaced() {
    let mut m = message();
    m["content"] = json!([
        {"type": "thinking", "thinking": "Her address is ann@example.com.", "signature": "Eq"},
        {"type": "text", "text": "Write to ann@example.com."},
    ]);
    m["stop_reason"] = json!("end_turn");
    let r = decode(&m);
    let rewritten = Settled {
        text: "Write to [email].".into(),
        tool_calls: vec![],
        finish: Finish::Stop,
        rewritten: true,
    };
    assert_eq!(r.removed(&rewritten), ["content[0](thinking)"]);
    let out = r.clone().settle(&rewritten);
    assert!(!out.to_string().contains("ann@example.com"), "{out}");
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "Write to [email]."}])
    );
    // Released as written, the thinking stays first.
    let same = Settled {
        text: "Write to ann@example.com.".into(),
        rewritten: false,
        ..rewritten
    };
    assert!(r.removed(&same).is_empty());
    assert_eq!(r.settle(&same)["content"][0]["type"], "thinking");
}
