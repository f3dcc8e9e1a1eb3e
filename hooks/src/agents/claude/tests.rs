//! The Claude Code adapter: every governed event decoded, every refusal
//! named, every outcome encoded in the hook output format.

use serde_json::{Value, json};

use super::{decode, encode, stop_agent};
use crate::error::Error;
use crate::event::{Event, Outcome};

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work",
        "permission_mode": "default",
        "hook_event_name": event,
        "prompt_id": "ignored",
    });
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    serde_json::to_vec(&v).unwrap()
}

fn decoded(event: &str, extra: Value) -> Event {
    let call = decode("claude-code", &payload(event, extra)).unwrap();
    assert_eq!(call.session_id, "s-1");
    assert_eq!(call.event_name, event);
    assert_eq!(call.cwd.as_deref(), Some("/work"));
    call.event
}

fn refusal(bytes: &[u8]) -> String {
    match decode("claude-code", bytes) {
        Err(Error::Payload { agent, reason }) => {
            assert_eq!(agent, "claude-code");
            reason
        }
        other => panic!("expected a payload error, got {other:?}"),
    }
}

#[test]
fn every_governed_event_decodes() {
    assert_eq!(
        decoded("SessionStart", json!({"source": "startup"})),
        Event::SessionStart {
            source: Some("startup".into())
        }
    );
    assert_eq!(
        decoded("UserPromptSubmit", json!({"prompt": "list files"})),
        Event::Prompt {
            prompt: "list files".into()
        }
    );
    let tool =
        json!({"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}});
    assert_eq!(
        decoded("PreToolUse", tool.clone()),
        Event::PreTool {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"})
        }
    );
    let mut post = tool;
    post["tool_response"] = json!({"stdout": "a\n", "stderr": ""});
    assert_eq!(
        decoded("PostToolUse", post),
        Event::PostTool {
            id: "toolu_1".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
            response: json!({"stdout": "a\n", "stderr": ""}),
            is_error: false
        }
    );
    assert_eq!(
        decoded("Stop", json!({"stop_hook_active": false})),
        Event::Stop {
            message: Value::Null
        }
    );
    assert_eq!(
        decoded("Stop", json!({"last_assistant_message": "done"})),
        Event::Stop {
            message: json!("done")
        }
    );
    assert_eq!(
        decoded("SessionEnd", json!({"reason": "other"})),
        Event::SessionEnd
    );
}

#[test]
fn malformed_payloads_are_refused_by_name() {
    assert!(refusal(b"not json").contains("not JSON"));
    assert!(refusal(b"[1]").contains("not a JSON object"));
    assert!(refusal(br#"{"hook_event_name":"Stop"}"#).contains("`session_id` is missing"));
    assert!(
        refusal(br#"{"session_id":"s","hook_event_name":7}"#)
            .contains("`hook_event_name` is not a string")
    );
    assert!(refusal(&payload("UserPromptSubmit", json!({}))).contains("`prompt` is missing"));
    assert!(
        refusal(&payload(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "t", "tool_input": "ls"})
        ))
        .contains("`tool_input` is not an object")
    );
    assert!(
        refusal(&payload(
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {}})
        ))
        .contains("`tool_use_id` is missing")
    );
    assert!(
        refusal(&payload(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "t", "tool_input": {}})
        ))
        .contains("`tool_response` is missing")
    );
    let unknown = refusal(&payload("Notification", json!({"message": "hi"})));
    assert!(
        unknown.contains("\"Notification\" is not governed"),
        "{unknown}"
    );
}

fn pre() -> Event {
    Event::PreTool {
        id: "t".into(),
        name: "Bash".into(),
        input: json!({}),
    }
}

#[test]
fn pre_tool_outcomes_use_the_permission_decision() {
    assert_eq!(encode(&pre(), &Outcome::Proceed), json!({}));
    let deny = encode(
        &pre(),
        &Outcome::Block {
            reason: "no".into(),
        },
    );
    assert_eq!(
        deny,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}})
    );
    let ask = encode(
        &pre(),
        &Outcome::Ask {
            reason: "why".into(),
        },
    );
    assert_eq!(ask["hookSpecificOutput"]["permissionDecision"], "ask");
    assert_eq!(ask["hookSpecificOutput"]["permissionDecisionReason"], "why");
    let rewrite = encode(&pre(), &Outcome::Rewrite(json!({"command": "true"})));
    assert_eq!(rewrite["hookSpecificOutput"]["permissionDecision"], "allow");
    assert_eq!(
        rewrite["hookSpecificOutput"]["updatedInput"],
        json!({"command": "true"})
    );
}

#[test]
fn other_events_block_with_decision_block() {
    let events = [
        Event::Prompt { prompt: "p".into() },
        Event::PostTool {
            id: "t".into(),
            name: "Bash".into(),
            input: json!({}),
            response: json!({}),
            is_error: false,
        },
        Event::Stop {
            message: Value::Null,
        },
    ];
    for event in &events {
        assert_eq!(encode(event, &Outcome::Proceed), json!({}));
        let blocked = json!({"decision": "block", "reason": "r"});
        assert_eq!(
            encode(event, &Outcome::Block { reason: "r".into() }),
            blocked
        );
        assert_eq!(encode(event, &Outcome::Ask { reason: "r".into() }), blocked);
        let unapplied = encode(event, &Outcome::Rewrite(json!("x")));
        assert_eq!(unapplied["decision"], "block");
    }
}

#[test]
fn a_denied_start_stops_the_agent() {
    let start = Event::SessionStart { source: None };
    let stopped = json!({"continue": false, "stopReason": "r"});
    assert_eq!(
        encode(&start, &Outcome::Stop { reason: "r".into() }),
        stopped
    );
    assert_eq!(
        encode(&start, &Outcome::Block { reason: "r".into() }),
        stopped
    );
    assert_eq!(
        encode(&Event::SessionEnd, &Outcome::Block { reason: "r".into() }),
        stopped
    );
    assert_eq!(
        encode(&pre(), &Outcome::Stop { reason: "r".into() }),
        stopped
    );
    assert_eq!(stop_agent("r"), stopped);
}
