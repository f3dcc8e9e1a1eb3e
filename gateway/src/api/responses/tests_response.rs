//! Whole answers: the neutral view, the settled rebuild (permitted,
//! blocked, withheld, hosted tools kept), the refusals and the error
//! shape.

use axum::http::StatusCode;
use hookwire::InterceptionPoint;
use hookwire_client::ToolCall;
use serde_json::{Value, json};

use super::items::MAX_OUTPUT_ITEMS;
use super::*;
use crate::api::model::{ApiResponse, Finish, Settled};

/// A whole answer: reasoning, a web search, text with a citation, two
/// calls.
fn answer_body() -> Value {
    json!({
        "id": "resp_9", "object": "response", "created_at": 1_700_000_000, "model": "gpt-4.1",
        "status": "completed", "incomplete_details": null, "parallel_tool_calls": true,
        "output": [
            {"type": "reasoning", "id": "rs_9", "summary": []},
            {"type": "web_search_call", "id": "ws_9", "status": "completed"},
            {"type": "message", "id": "msg_9", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "See docs.",
                          "annotations": [{"type": "url_citation", "start_index": 4,
                                           "end_index": 8, "url": "https://x", "title": "x"}]}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
             "arguments": "{\"path\":\"/\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "rm",
             "arguments": "{\"path\":\"/\"}", "status": "completed"}
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        "output_text": "See docs."
    })
}

fn response(v: &Value) -> ResponsesResponse {
    Responses::decode_response(v.to_string().as_bytes()).unwrap()
}

#[test]
fn a_whole_answer_reads_as_text_calls_and_hosted_outputs() {
    let r = response(&answer_body());
    let a = r.answer().unwrap();
    assert_eq!(a.content, json!("See docs."));
    assert_eq!(
        a.tool_calls,
        [
            ToolCall::new("call_1", "ls", json!({"path": "/"})),
            ToolCall::new("call_2", "rm", json!({"path": "/"}))
        ]
    );
    assert_eq!(a.finish_reason, "tool_calls");
    assert_eq!(r.other_outputs(), ["reasoning", "web_search_call"]);
    assert_eq!(r.id().as_deref(), Some("resp_9"));

    let mut cut = answer_body();
    cut["output"] = json!([cut["output"][2].clone()]);
    cut["status"] = "incomplete".into();
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    assert_eq!(response(&cut).answer().unwrap().finish_reason, "length");
    cut["incomplete_details"] = json!({"reason": "content_filter"});
    assert_eq!(
        response(&cut).answer().unwrap().finish_reason,
        "content_filter"
    );
    cut["status"] = "completed".into();
    assert_eq!(response(&cut).answer().unwrap().finish_reason, "stop");
    let calls_only = json!({"id": "r", "output": [answer_body()["output"][3].clone()]});
    assert_eq!(response(&calls_only).answer().unwrap().content, Value::Null);
}

#[test]
fn unusable_answers_are_refused() {
    for body in [
        &b"not json"[..],
        b"{\"id\":\"r\"}",
        b"[]",
        b"{\"output\":[1]}",
    ] {
        assert!(matches!(
            Responses::decode_response(body),
            Err(Error::UpstreamResponse(_))
        ));
    }
    let mut many = answer_body();
    many["output"] = Value::Array(vec![json!({"type": "reasoning"}); MAX_OUTPUT_ITEMS + 1]);
    assert!(Responses::decode_response(many.to_string().as_bytes()).is_err());
    let shell = json!({"output": [{"type": "local_shell_call", "call_id": "c"}]});
    assert!(
        matches!(response(&shell).answer(), Err(Error::UpstreamResponse(m)) if m.contains("local_shell_call"))
    );
    let no_name = json!({"output": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]});
    assert!(response(&no_name).answer().is_err());
}

#[test]
fn settling_keeps_hosted_items_and_only_permitted_calls() {
    let settled = Settled {
        text: "See docs.\n[hookwire] tool call \"rm\" (call_2) was blocked: destructive".into(),
        tool_calls: vec![ToolCall::new("call_1", "ls", json!({"path": "/home"}))],
        finish: Finish::ToolCalls,
        rewritten: false,
    };
    let out = response(&answer_body()).settle(&settled);
    let output = out["output"].as_array().unwrap();
    assert_eq!(output.len(), 4);
    assert_eq!(output[0], answer_body()["output"][0]);
    assert_eq!(output[1], answer_body()["output"][1]);
    assert_eq!(
        output[2],
        json!({"id": "msg_9", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "annotations": [], "text": settled.text}]})
    );
    assert_eq!(
        output[3],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
               "arguments": "{\"path\":\"/home\"}", "status": "completed"})
    );
    assert_eq!(out["status"], "completed");
    assert_eq!(out["output_text"], settled.text.as_str());
    assert_eq!(out["usage"], answer_body()["usage"]);
    assert_eq!(out["id"], "resp_9");
}

#[test]
fn unchanged_text_keeps_its_annotations() {
    let settled = Settled {
        text: "See docs.".into(),
        tool_calls: vec![],
        finish: Finish::Stop,
        rewritten: false,
    };
    let out = response(&answer_body()).settle(&settled);
    assert_eq!(out["output"][2], answer_body()["output"][2]);
    assert_eq!(out["output"].as_array().unwrap().len(), 3);
}

#[test]
fn a_withheld_answer_is_incomplete_by_content_filter() {
    let settled = Settled {
        text: "[hookwire] the response was withheld: pii".into(),
        tool_calls: vec![],
        finish: Finish::Withheld,
        rewritten: false,
    };
    let out = response(&answer_body()).settle(&settled);
    assert_eq!(out["status"], "incomplete");
    assert_eq!(
        out["incomplete_details"],
        json!({"reason": "content_filter"})
    );
    // The notice alone: no reasoning or hosted item repeats what was
    // withheld, and the record names what went.
    let output = out["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "{out}");
    assert_eq!(output[0]["status"], "incomplete");
    assert_eq!(output[0]["content"][0]["text"], settled.text.as_str());
    assert_eq!(
        response(&answer_body()).removed(&settled),
        ["output[0](reasoning)", "output[1](web_search_call)"]
    );
}

#[test]
fn a_notice_without_upstream_text_gets_its_own_message() {
    let body = json!({"id": "resp_7", "status": "completed", "output": [
        {"type": "reasoning", "id": "rs_7", "summary": []},
        {"type": "function_call", "id": "fc_7", "call_id": "c7", "name": "rm", "arguments": "{}"}]});
    let settled = Settled {
        text: "[hookwire] blocked".into(),
        tool_calls: vec![],
        finish: Finish::Stop,
        rewritten: false,
    };
    let out = response(&body).settle(&settled);
    let output = out["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(output[1]["id"], "msg_7");
    assert_eq!(output[1]["content"][0]["text"], "[hookwire] blocked");
    let length = Settled {
        text: String::new(),
        tool_calls: vec![],
        finish: Finish::Length,
        rewritten: false,
    };
    let out = response(&body).settle(&length);
    assert_eq!(out["output"].as_array().unwrap().len(), 1);
    assert_eq!(
        out["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
}

#[test]
fn errors_have_the_openai_shape_and_status() {
    let (status, body) = Responses::error_body(&Error::Denied {
        point: InterceptionPoint::Input,
        reason: "pii".into(),
        message: None,
    });
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["type"], "hookwire_denied");
    assert_eq!(body["error"]["code"], "pii");
    assert!(body["error"]["message"].as_str().unwrap().contains("input"));
    assert_eq!(body["error"]["param"], Value::Null);
    let (status, body) = Responses::error_body(&Error::BadRequest("input must be".into()));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["type"], "invalid_request_error");
}
