//! The Cursor adapter: every governed event decoded (the conversation as
//! the session, the pre-only events given ids of their own), every
//! refusal named, every outcome encoded in Cursor's output format.

use serde_json::{Value, json};

use super::{decode, encode, stop_agent};
use crate::error::Error;
use crate::event::{Event, Outcome};

fn payload(event: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({
        "conversation_id": "conv-1",
        "generation_id": "gen-1",
        "hook_event_name": event,
        "workspace_roots": ["/work"],
        "model": "ignored",
        "cursor_version": "2.0.77",
    });
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    serde_json::to_vec(&v).unwrap()
}

fn decoded(event: &str, extra: Value) -> Event {
    let call = decode(&payload(event, extra)).unwrap();
    assert_eq!(call.session_id, "conv-1");
    assert_eq!(call.event_name, event);
    call.event
}

fn refusal(bytes: &[u8]) -> String {
    match decode(bytes) {
        Err(Error::Payload { agent, reason }) => {
            assert_eq!(agent, "cursor");
            reason
        }
        other => panic!("expected a payload error, got {other:?}"),
    }
}

#[test]
fn every_governed_event_decodes() {
    assert_eq!(
        decoded("sessionStart", json!({"session_id": "conv-1"})),
        Event::SessionStart { source: None }
    );
    assert_eq!(
        decoded(
            "beforeSubmitPrompt",
            json!({"prompt": "fix it", "attachments": []})
        ),
        Event::Prompt {
            prompt: "fix it".into()
        }
    );
    let tool = json!({"tool_name": "Shell", "tool_use_id": "t-1",
                      "tool_input": {"command": "ls"}, "cwd": "/work/sub"});
    let call = decode(&payload("preToolUse", tool.clone())).unwrap();
    assert_eq!(call.cwd.as_deref(), Some("/work/sub"));
    assert_eq!(
        call.event,
        Event::PreTool {
            id: "t-1".into(),
            name: "Shell".into(),
            input: json!({"command": "ls"})
        }
    );
    // Arguments sent as JSON text are decoded.
    let mut text = tool.clone();
    text["tool_input"] = json!("{\"command\": \"ls\"}");
    assert!(
        matches!(decoded("preToolUse", text), Event::PreTool { input, .. } if input == json!({"command": "ls"}))
    );
    let mut after = tool;
    after["tool_output"] = json!("{\"stdout\": \"a\"}");
    assert_eq!(
        decoded("postToolUse", after),
        Event::PostTool {
            id: "t-1".into(),
            name: "Shell".into(),
            input: json!({"command": "ls"}),
            response: json!("{\"stdout\": \"a\"}"),
            is_error: false
        }
    );
    assert_eq!(
        decoded("stop", json!({"status": "completed", "loop_count": 0})),
        Event::Stop {
            message: Value::Null
        }
    );
    assert_eq!(
        decoded("sessionEnd", json!({"reason": "user_close"})),
        Event::SessionEnd
    );
    // No cwd: the first workspace root.
    let call = decode(&payload("stop", json!({}))).unwrap();
    assert_eq!(call.cwd.as_deref(), Some("/work"));
}

#[test]
fn the_pre_only_events_are_tool_calls_with_ids_of_their_own() {
    let shell = json!({"command": "rm -rf /", "cwd": "/work"});
    let Event::PreTool { id: a, name, input } = decoded("beforeShellExecution", shell.clone())
    else {
        panic!("a pre-tool event")
    };
    assert_eq!((name.as_str(), &input), ("Shell", &shell));
    let Event::PreTool { id: b, .. } = decoded("beforeShellExecution", shell) else {
        panic!()
    };
    assert!(a.starts_with("cursor:") && a != b, "{a} {b}");
    assert!(matches!(
        decoded("beforeMCPExecution", json!({"tool_name": "db_query", "tool_input": "{\"q\": 1}", "url": "http://x"})),
        Event::PreTool { name, input, .. } if name == "db_query" && input == json!({"q": 1})
    ));
    assert!(matches!(
        decoded("beforeReadFile", json!({"file_path": "/work/.env", "content": "K=V", "attachments": []})),
        Event::PreTool { name, input, .. } if name == "Read" && input == json!({"file_path": "/work/.env"})
    ));
}

#[test]
fn unreadable_and_ungoverned_payloads_are_refused() {
    assert!(refusal(b"{oops").contains("not JSON"));
    assert!(refusal(b"[]").contains("not a JSON object"));
    assert!(refusal(br#"{"hook_event_name": "stop"}"#).contains("`conversation_id` is missing"));
    assert!(
        refusal(&payload(
            "afterFileEdit",
            json!({"file_path": "/a", "edits": []})
        ))
        .contains("\"afterFileEdit\" is not governed")
    );
    assert!(
        refusal(&payload(
            "preToolUse",
            json!({"tool_name": "Shell", "tool_use_id": "t"})
        ))
        .contains("`tool_input` is missing")
    );
    assert!(
        refusal(&payload(
            "preToolUse",
            json!({"tool_name": "Shell", "tool_use_id": "t", "tool_input": "not json"})
        ))
        .contains("not a JSON object")
    );
    assert!(
        refusal(&payload(
            "postToolUse",
            json!({"tool_name": "Shell", "tool_use_id": "t", "tool_input": {}})
        ))
        .contains("`tool_output` is missing")
    );
}

#[test]
fn every_outcome_is_encoded_in_cursors_terms() {
    let pre = Event::PreTool {
        id: "t".into(),
        name: "Shell".into(),
        input: json!({}),
    };
    let prompt = Event::Prompt { prompt: "p".into() };
    let block = Outcome::Block {
        reason: "no".into(),
    };
    assert_eq!(encode(&pre, &Outcome::Proceed), json!({}));
    assert_eq!(
        encode(&prompt, &Outcome::Proceed),
        json!({"continue": true})
    );
    let denied = encode(&pre, &block);
    assert_eq!(denied["permission"], "deny");
    assert_eq!(denied["user_message"], "no");
    assert_eq!(denied["agent_message"], "no");
    assert_eq!(denied["decision"], "deny");
    // No ask and no rewrite: both block.
    assert_eq!(
        encode(
            &pre,
            &Outcome::Ask {
                reason: "no".into()
            }
        ),
        denied
    );
    assert_eq!(
        encode(&pre, &Outcome::Rewrite(json!({})))["permission"],
        "deny"
    );
    assert_eq!(
        encode(&prompt, &block),
        json!({"continue": false, "user_message": "no"})
    );
    let stop = Event::Stop {
        message: Value::Null,
    };
    assert_eq!(encode(&stop, &block), json!({"followup_message": "no"}));
    let post = Event::PostTool {
        id: "t".into(),
        name: "Shell".into(),
        input: json!({}),
        response: json!(""),
        is_error: false,
    };
    assert_eq!(encode(&post, &block), json!({"additional_context": "no"}));
    let start = Event::SessionStart { source: None };
    assert_eq!(
        encode(
            &start,
            &Outcome::Stop {
                reason: "no".into()
            }
        ),
        json!({"continue": false, "user_message": "no"})
    );
    let stopped = stop_agent("bad");
    assert_eq!(
        (
            stopped["permission"].as_str(),
            stopped["continue"].as_bool()
        ),
        (Some("deny"), Some(false))
    );
}
