//! The daemon's HTTP hook routes, `POST /v1/hooks/AGENT`, as each agent
//! posts its hooks (the golden payloads of `tests/fixtures/hooks/`):
//! the bearer token required (its scheme case-insensitive, anything but
//! `Bearer` and a token68 refused like a wrong token), an unknown agent
//! 404, each verdict in the agent's own format, what cannot be read
//! answered 200 with the deny the agent honours and the
//! `hookwire-failed-closed` header, and the session's points recorded.

use hookwire_testkit::hooks_daemon::{
    Daemon, TOKEN, fixtures, golden, post, post_authorized, pre_tool_decision,
};
use serde_json::Value;

/// The golden payload `name` of `agent`.
fn golden_of(agent: &str, name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(agent).join(format!("{name}.json"))).unwrap()
}

/// The reason of Cursor's deny (its agent and user messages alike).
fn denied(v: &Value) -> &str {
    assert_eq!(v["permission"], "deny", "{v}");
    assert_eq!(v["agent_message"], v["user_message"], "{v}");
    v["user_message"].as_str().unwrap()
}

#[test]
fn the_http_route_answers_in_the_agents_format() {
    let d = Daemon::start(&[]);
    let route = "/v1/hooks/claude-code";
    let payload = golden("pre-tool-use-bash-destructive");
    assert_eq!(post(&d.base, route, None, &payload).0, 401);
    assert_eq!(post(&d.base, route, Some("wrong"), &payload).0, 401);
    // The scheme is case-insensitive (RFC 9110); anything but `Bearer`
    // and a token68 is refused like a wrong token.
    for malformed in [
        TOKEN.to_owned(),
        format!("Basic {TOKEN}"),
        format!("Bearer {TOKEN},x"),
        format!("Bearer\t{TOKEN}"),
        "Bearer".to_owned(),
    ] {
        let (status, _, _) = post_authorized(&d.base, route, Some(&malformed), &payload);
        assert_eq!(status, 401, "{malformed:?}");
    }
    assert_eq!(
        post(&d.base, "/v1/hooks/windsurf", Some(TOKEN), &payload).0,
        404
    );
    let lower = format!("bearer  {TOKEN}");
    let (status, failed, body) = post_authorized(&d.base, route, Some(&lower), &payload);
    assert_eq!((status, failed), (200, None));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(pre_tool_decision(&v).0, "deny");
    // Codex speaks the same format on its own route, its own session.
    let (status, _, body) = post(
        &d.base,
        "/v1/hooks/codex",
        Some(TOKEN),
        &golden("pre-tool-use-bash"),
    );
    assert_eq!((status, body.as_str()), (200, "{}"));
    // What cannot be read stops the agent, still with a 200 (an HTTP
    // hook's non-2xx status would let the step through).
    let (status, failed, body) = post(&d.base, route, Some(TOKEN), &golden("notification"));
    assert_eq!(status, 200);
    assert!(failed.unwrap().contains("not governed"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["continue"], false);
    assert_eq!(
        d.points("claude-code:abc123"),
        ["agent_startup", "input", "pre_tool_call"]
    );
}

#[test]
fn cursor_route_answers_in_cursors_format() {
    let d = Daemon::start(&[]);
    let route = "/v1/hooks/cursor";
    let (status, failed, body) = post(
        &d.base,
        route,
        Some(TOKEN),
        &golden_of("cursor", "pre-tool-use-shell-destructive"),
    );
    assert_eq!((status, failed), (200, None));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(denied(&v).contains("destructive"));
    assert_eq!(
        post(&d.base, route, None, &golden_of("cursor", "stop")).0,
        401
    );
    // What cannot be read is answered with the deny every event honours.
    let (status, failed, body) = post(
        &d.base,
        route,
        Some(TOKEN),
        &golden_of("cursor", "after-file-edit"),
    );
    assert_eq!(status, 200);
    assert!(failed.unwrap().contains("not governed"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["permission"].as_str(), v["continue"].as_bool()),
        (Some("deny"), Some(false))
    );
    // A tool event first (no sessionStart, no prompt seen): the session is
    // started and a turn opened, both recorded, before the call is judged.
    assert_eq!(
        d.points("cursor:9f1c2d3e-cursor"),
        ["agent_startup", "input", "pre_tool_call"]
    );
}

#[test]
fn copilot_route_answers_in_copilots_format() {
    let d = Daemon::start(&[]);
    let route = "/v1/hooks/copilot";
    let (status, failed, body) = post(
        &d.base,
        route,
        Some(TOKEN),
        &golden_of("copilot", "pre-tool-use-bash-destructive"),
    );
    assert_eq!((status, failed), (200, None));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["permissionDecision"], "deny");
    let (status, failed, body) = post(
        &d.base,
        route,
        Some(TOKEN),
        &golden_of("copilot", "error-occurred"),
    );
    assert_eq!(status, 200);
    assert!(failed.unwrap().contains("not governed"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["permissionDecision"], "deny");
}
