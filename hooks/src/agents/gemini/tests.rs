//! The Gemini CLI adapter: every governed event decoded, the derived
//! pairing id, every outcome encoded, a rewrite a merge cannot express
//! blocked.

use serde_json::{Value, json};

use super::{decode, encode};
use crate::event::{Event, Outcome};

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({"session_id": "g-1", "transcript_path": "/tmp/t.json", "cwd": "/work",
                       "hook_event_name": event, "timestamp": "2026-01-01T00:00:00Z"});
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    serde_json::to_vec(&v).unwrap()
}

fn decoded(event: &str, extra: Value) -> Event {
    decode(&payload(event, extra)).unwrap().event
}

#[test]
fn every_governed_event_decodes_and_tool_events_pair() {
    assert_eq!(
        decoded("SessionStart", json!({"source": "startup"})),
        Event::SessionStart {
            source: Some("startup".into())
        }
    );
    assert_eq!(
        decoded("BeforeAgent", json!({"prompt": "fix it"})),
        Event::Prompt {
            prompt: "fix it".into()
        }
    );
    let tool = json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}});
    let Event::PreTool {
        id: pre_id, name, ..
    } = decoded("BeforeTool", tool.clone())
    else {
        panic!("a pre-tool event");
    };
    assert_eq!(name, "run_shell_command");
    assert!(
        pre_id.starts_with("gemini:") && pre_id.len() == 7 + 16,
        "{pre_id}"
    );
    let mut after = tool;
    after["tool_response"] = json!({"llmContent": "a", "returnDisplay": "a", "error": null});
    let Event::PostTool { id, is_error, .. } = decoded("AfterTool", after.clone()) else {
        panic!("a post-tool event");
    };
    assert_eq!(id, pre_id);
    assert!(!is_error);
    after["tool_response"]["error"] = json!("boom");
    assert!(matches!(
        decoded("AfterTool", after),
        Event::PostTool { is_error: true, .. }
    ));
    let other = json!({"tool_name": "run_shell_command", "tool_input": {"command": "pwd"}});
    let Event::PreTool { id, .. } = decoded("BeforeTool", other) else {
        panic!()
    };
    assert_ne!(id, pre_id);
    assert_eq!(
        decoded(
            "AfterAgent",
            json!({"prompt": "p", "prompt_response": "done", "stop_hook_active": false})
        ),
        Event::Stop {
            message: json!("done")
        }
    );
    assert_eq!(
        decoded("SessionEnd", json!({"reason": "exit"})),
        Event::SessionEnd
    );
}

#[test]
fn malformed_and_ungoverned_payloads_are_refused() {
    for (event, extra) in [
        ("BeforeAgent", json!({})),
        ("BeforeTool", json!({"tool_name": "x"})),
        ("BeforeTool", json!({"tool_name": "x", "tool_input": []})),
        ("AfterTool", json!({"tool_name": "x", "tool_input": {}})),
        ("BeforeModel", json!({"llm_request": {}})),
        ("Notification", json!({})),
    ] {
        assert!(
            decode(&payload(event, extra.clone())).is_err(),
            "{event} {extra}"
        );
    }
    assert!(decode(b"[]").is_err());
    assert!(decode(br#"{"hook_event_name": "SessionEnd"}"#).is_err());
}

#[test]
fn outcomes_encode_as_decisions() {
    let pre = Event::PreTool {
        id: "i".into(),
        name: "n".into(),
        input: json!({"command": "rm -rf /", "dir": "."}),
    };
    assert_eq!(encode(&pre, &Outcome::Proceed), json!({}));
    let denied = json!({"decision": "deny", "reason": "r"});
    assert_eq!(encode(&pre, &Outcome::Block { reason: "r".into() }), denied);
    assert_eq!(encode(&pre, &Outcome::Ask { reason: "r".into() }), denied);
    let rewrite = json!({"command": "ls", "dir": "."});
    assert_eq!(
        encode(&pre, &Outcome::Rewrite(rewrite.clone())),
        json!({"hookSpecificOutput": {"tool_input": rewrite}})
    );
    let dropped = encode(&pre, &Outcome::Rewrite(json!({"command": "ls"})));
    assert_eq!(dropped["decision"], "deny");
    let stop = Event::Stop {
        message: Value::Null,
    };
    assert_eq!(
        encode(&stop, &Outcome::Block { reason: "r".into() }),
        denied
    );
    assert_eq!(
        encode(&stop, &Outcome::Rewrite(json!("x")))["decision"],
        "deny"
    );
    let stopped = json!({"continue": false, "stopReason": "r"});
    let start = Event::SessionStart { source: None };
    assert_eq!(
        encode(&start, &Outcome::Stop { reason: "r".into() }),
        stopped
    );
    assert_eq!(
        encode(&start, &Outcome::Block { reason: "r".into() }),
        stopped
    );
}

#[test]
fn model_events_decode_and_their_rewrites_encode() {
    let request = json!({"model": "gemini-2.5-pro", "messages": [{"role": "user", "content": "hi"}], "config": {}});
    let pre = decoded("BeforeModel", json!({"llm_request": request}));
    assert_eq!(
        pre,
        Event::PreModel {
            model: "gemini-2.5-pro".into(),
            messages: json!([{"role": "user", "content": "hi"}])
        }
    );
    let chunk = |parts: Value, finish: Value| {
        decoded(
            "AfterModel",
            json!({"llm_request": request, "llm_response": {"candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": finish}]}}),
        )
    };
    assert_eq!(
        chunk(json!(["Hel", "lo"]), json!("")),
        Event::PostModel {
            model: "gemini-2.5-pro".into(),
            text: "Hello".into(),
            finish_reason: None
        }
    );
    let last = chunk(json!([]), json!("STOP"));
    assert!(matches!(&last, Event::PostModel { finish_reason: Some(r), .. } if r == "STOP"));
    assert!(decode(&payload("AfterModel", json!({"llm_request": request, "llm_response": {"candidates": [{"content": {"parts": [{"inlineData": 1}]}}]}}))).is_err());
    assert!(decode(&payload("AfterModel", json!({"llm_request": request}))).is_err());
    assert!(
        decode(&payload(
            "BeforeModel",
            json!({"llm_request": {"model": "m"}})
        ))
        .is_err()
    );

    let messages = json!([{"role": "user", "content": "[redacted]"}]);
    assert_eq!(
        encode(&pre, &Outcome::Rewrite(messages.clone())),
        json!({"hookSpecificOutput": {"llm_request": {"messages": messages}}})
    );
    assert_eq!(
        encode(&last, &Outcome::Rewrite(json!("***"))),
        json!({"hookSpecificOutput": {"llm_response": {"candidates": [
            {"content": {"role": "model", "parts": ["***"]}, "finishReason": "STOP"}]}}})
    );
    assert_eq!(
        encode(&last, &Outcome::Block { reason: "r".into() }),
        json!({"decision": "deny", "reason": "r"})
    );
    assert_eq!(
        encode(&last, &Outcome::Rewrite(json!(1)))["decision"],
        "deny"
    );
}

#[test]
fn a_rewritten_tool_result_is_its_text() {
    let post = Event::PostTool {
        id: "i".into(),
        name: "run_shell_command".into(),
        input: json!({}),
        response: json!({"llmContent": "AKIA…", "returnDisplay": "AKIA…"}),
        is_error: false,
    };
    let rewritten = json!({"llmContent": "[redacted]", "returnDisplay": "AKIA…"});
    assert_eq!(
        encode(&post, &Outcome::Rewrite(rewritten)),
        json!({"hookSpecificOutput": {"tool_output": "[redacted]"}})
    );
    assert_eq!(
        encode(&post, &Outcome::Rewrite(json!("plain"))),
        json!({"hookSpecificOutput": {"tool_output": "plain"}})
    );
    assert_eq!(
        encode(&post, &Outcome::Rewrite(json!({"llmContent": 3})))["decision"],
        "deny"
    );
}
