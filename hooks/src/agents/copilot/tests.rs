//! The Copilot adapter: each event told by its members, the session by
//! `sessionId` or else the working directory, tool calls paired by name
//! and arguments, every refusal named, every outcome encoded in the
//! answers Copilot reads.

use serde_json::{Value, json};

use super::{decode, encode, stop_agent};
use crate::error::Error;
use crate::event::{Event, Outcome};

fn payload(extra: Value) -> Vec<u8> {
    let mut v = json!({"sessionId": "cop-1", "timestamp": 1_767_000_000_000_u64, "cwd": "/work"});
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    serde_json::to_vec(&v).unwrap()
}

fn decoded(extra: Value) -> (String, Event) {
    let call = decode(&payload(extra)).unwrap();
    assert_eq!(call.session_id, "cop-1");
    assert_eq!(call.cwd.as_deref(), Some("/work"));
    (call.event_name, call.event)
}

fn refusal(bytes: &[u8]) -> String {
    match decode(bytes) {
        Err(Error::Payload { agent, reason }) => {
            assert_eq!(agent, "copilot");
            reason
        }
        other => panic!("expected a payload error, got {other:?}"),
    }
}

#[test]
fn each_event_is_told_by_its_members() {
    assert_eq!(
        decoded(json!({"source": "new", "initialPrompt": "hi"})),
        (
            "sessionStart".into(),
            Event::SessionStart {
                source: Some("new".into())
            }
        )
    );
    assert_eq!(
        decoded(json!({"prompt": "fix it"})),
        (
            "userPromptSubmitted".into(),
            Event::Prompt {
                prompt: "fix it".into()
            }
        )
    );
    let tool = json!({"toolName": "bash", "toolArgs": "{\"command\":\"ls\"}"});
    let (
        name,
        Event::PreTool {
            id: pre_id,
            name: tool_name,
            input,
        },
    ) = decoded(tool.clone())
    else {
        panic!("a pre-tool event")
    };
    assert_eq!((name.as_str(), tool_name.as_str()), ("preToolUse", "bash"));
    assert_eq!(input, json!({"command": "ls"}));
    assert!(
        pre_id.starts_with("copilot:") && pre_id.len() == 8 + 16,
        "{pre_id}"
    );
    let mut after = tool.clone();
    after["toolResult"] = json!({"resultType": "success", "textResultForLlm": "a"});
    let (name, Event::PostTool { id, is_error, .. }) = decoded(after.clone()) else {
        panic!("a post-tool event")
    };
    assert_eq!(
        (name.as_str(), id.as_str(), is_error),
        ("postToolUse", pre_id.as_str(), false)
    );
    after["toolResult"]["resultType"] = json!("failure");
    assert!(matches!(
        decoded(after).1,
        Event::PostTool { is_error: true, .. }
    ));
    let mut failed = tool;
    failed["error"] = json!("exit 1");
    assert!(matches!(
        decoded(failed),
        (n, Event::PostTool { is_error: true, response, .. }) if n == "postToolUseFailure" && response == json!({"error": "exit 1"})
    ));
    // Arguments that are not JSON text stay the text they are.
    assert!(matches!(
        decoded(json!({"toolName": "bash", "toolArgs": "ls -la"})).1,
        Event::PreTool { input, .. } if input == json!("ls -la")
    ));
    assert_eq!(
        decoded(json!({"transcriptPath": "/t", "stopReason": "end_turn"})),
        (
            "agentStop".into(),
            Event::Stop {
                message: Value::Null
            }
        )
    );
    assert_eq!(
        decoded(json!({"reason": "complete"})),
        ("sessionEnd".into(), Event::SessionEnd)
    );
}

#[test]
fn a_payload_without_a_session_id_is_keyed_by_its_directory() {
    let a = decode(br#"{"timestamp": 1, "cwd": "/work", "prompt": "p"}"#).unwrap();
    let b = decode(br#"{"timestamp": 2, "cwd": "/work", "toolName": "bash", "toolArgs": "{}"}"#)
        .unwrap();
    let c = decode(br#"{"timestamp": 3, "cwd": "/elsewhere", "prompt": "p"}"#).unwrap();
    assert!(a.session_id.starts_with("cwd-") && a.session_id.len() == 4 + 16);
    assert_eq!(a.session_id, b.session_id);
    assert_ne!(a.session_id, c.session_id);
}

#[test]
fn unreadable_and_ungoverned_payloads_are_refused() {
    assert!(refusal(b"nope").contains("not JSON"));
    assert!(refusal(br#"{"prompt": "p"}"#).contains("`cwd` is missing"));
    assert!(refusal(&payload(json!({}))).contains("none of the events"));
    assert!(
        refusal(&payload(
            json!({"error": {"message": "m", "name": "E"}, "recoverable": true})
        ))
        .contains("\"errorOccurred\" is not governed")
    );
    assert!(
        refusal(&payload(
            json!({"agentName": "a", "stopReason": "end_turn"})
        ))
        .contains("\"subagentStop\"")
    );
    assert!(
        refusal(&payload(
            json!({"hook_event_name": "PreToolUse", "tool_name": "bash"})
        ))
        .contains("camelCase")
    );
    assert!(refusal(&payload(json!({"agentName": "a"}))).contains("\"subagentStart\""));
    assert!(
        refusal(&payload(
            json!({"hook_event_name": "Notification", "message": "m"})
        ))
        .contains("\"Notification\"")
    );
    assert!(refusal(&payload(json!({"toolName": "bash"}))).contains("`toolArgs` is missing"));
    assert!(
        refusal(&payload(json!({"sessionId": 7, "prompt": "p"})))
            .contains("`sessionId` is not a string")
    );
}

#[test]
fn every_outcome_is_encoded_in_the_answers_copilot_reads() {
    let pre = Event::PreTool {
        id: "t".into(),
        name: "bash".into(),
        input: json!({}),
    };
    assert_eq!(encode(&pre, &Outcome::Proceed), json!({}));
    assert_eq!(
        encode(
            &pre,
            &Outcome::Block {
                reason: "no".into()
            }
        ),
        json!({"permissionDecision": "deny", "permissionDecisionReason": "no"})
    );
    assert_eq!(
        encode(
            &pre,
            &Outcome::Ask {
                reason: "why".into()
            }
        ),
        json!({"permissionDecision": "ask", "permissionDecisionReason": "why"})
    );
    let rewritten = encode(&pre, &Outcome::Rewrite(json!({"command": "ls"})));
    assert_eq!(rewritten["permissionDecision"], "allow");
    assert_eq!(rewritten["modifiedArgs"], json!({"command": "ls"}));
    assert_eq!(
        encode(&pre, &Outcome::Rewrite(json!("ls")))["permissionDecision"],
        "deny"
    );
    let stop = Event::Stop {
        message: Value::Null,
    };
    assert_eq!(
        encode(
            &stop,
            &Outcome::Block {
                reason: "no".into()
            }
        ),
        json!({"decision": "block", "reason": "no"})
    );
    // Copilot reads no answer to a prompt or a result: the core
    // quarantines the turn instead.
    let prompt = Event::Prompt { prompt: "p".into() };
    assert_eq!(
        encode(
            &prompt,
            &Outcome::Block {
                reason: "no".into()
            }
        ),
        json!({})
    );
    let stopped = stop_agent("bad");
    assert_eq!(stopped["permissionDecision"], "deny");
    assert_eq!(stopped["decision"], "block");
}
