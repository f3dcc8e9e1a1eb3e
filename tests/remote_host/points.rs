//! Each point reaches the service with its fields, and verdicts are applied
//! to what the agent does next.

use super::*;

#[tokio::test]
async fn every_point_reaches_the_remote_with_its_fields() {
    let recorder = Scripted::allow_all("recorder");
    let server = recorder.clone().serve().await;
    let (host, records) = host_with(&[("recorder", &server)]);
    let mut members = Map::new();
    members.insert(
        "trace".into(),
        json!({"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7"}),
    );
    members.insert(
        "extensions".into(),
        json!({"acme": {"tier": 3, "ratio": 0.5, "tags": ["a", null, "é😀"]}}),
    );
    let session = host.session_with("s-fields", members).unwrap();

    session.start(["bash", "search"]).await.unwrap();
    session
        .input(json!("hello"), InputRole::User)
        .await
        .unwrap();
    session
        .pre_model_call("m1", json!([{"role": "user", "content": "hello"}]))
        .await
        .unwrap();
    let response = ModelResponse {
        content: Value::Null,
        tool_calls: vec![bash("ls")],
        finish_reason: "tool_calls".into(),
    };
    session.post_model_call("m1", &response).await.unwrap();
    session.pre_tool_call(&bash("ls")).await.unwrap();
    let result = ToolResult {
        value: json!({"stdout": "a\nb", "code": 0}),
        is_error: false,
    };
    session.post_tool_call(&bash("ls"), &result).await.unwrap();
    session
        .output(json!({"text": "done", "n": 2}))
        .await
        .unwrap();
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let seen = recorder.seen();
    let points: Vec<_> = seen.iter().map(|c| c.point()).collect();
    assert_eq!(points, InterceptionPoint::ALL);
    for (i, ctx) in seen.iter().enumerate() {
        let j = ctx.to_json();
        assert_eq!(j["sequence"], json!(i));
        assert_eq!(j["spec"], json!("agent-hooks/0.1"));
        assert_eq!(
            j["agent"],
            json!({"id": "test-agent", "framework": "hookwire"})
        );
        assert_eq!(j["session"], json!({"id": "s-fields"}));
        assert_eq!(
            j["extensions"]["acme"],
            json!({"tier": 3, "ratio": 0.5, "tags": ["a", null, "é😀"]})
        );
        assert_eq!(j["trace"]["span_id"], json!("00f067aa0ba902b7"));
        assert!(j["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    let j: Vec<Value> = seen.iter().map(|c| c.to_json()).collect();
    assert_eq!(
        j[0]["agent_init"],
        json!({"tools_registered": ["bash", "search"]})
    );
    assert_eq!(j[0]["target"], j[0]["agent_init"]);
    assert_eq!(j[1]["input"], json!({"content": "hello", "role": "user"}));
    assert_eq!(j[2]["model"], json!({"id": "m1"}));
    assert_eq!(
        j[2]["target"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(j[3]["response"]["tool_calls"][0]["name"], json!("bash"));
    assert_eq!(
        j[4]["tool_call"],
        json!({"id": "call-1", "name": "bash", "args": {"cmd": "ls", "timeout_s": 30}})
    );
    assert_eq!(j[4]["target"], json!({"cmd": "ls", "timeout_s": 30}));
    assert_eq!(
        j[5]["tool_result"],
        json!({"value": {"stdout": "a\nb", "code": 0}, "is_error": false})
    );
    assert_eq!(j[5]["target"], json!({"stdout": "a\nb", "code": 0}));
    assert_eq!(j[6]["target"], json!({"content": {"text": "done", "n": 2}}));
    assert_eq!(j[7]["summary"], json!({"reason": "completed"}));

    let recs = records.session("s-fields");
    assert_eq!(recs.len(), 8);
    assert!(recs.iter().all(|r| r.verdict.decision == Decision::Allow));
    assert!(recs.iter().all(|r| {
        r.input_identity
            .as_deref()
            .is_some_and(|i| i.starts_with("sha256:"))
    }));
    assert_eq!(
        recs[0].trace.as_ref().unwrap()["trace_id"],
        json!("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    server.shutdown().await.unwrap();
}

/// A transform at `pre_tool_call` rewrites what the tool receives.
#[tokio::test]
async fn transformed_tool_args_are_what_the_tool_receives() {
    let rewriter = Scripted::new("rewriter", |ctx| match target_str(ctx, "cmd") {
        Some("rm -rf /") => Verdict::transform("$target.cmd", json!("echo refused")),
        _ => Verdict::allow(),
    });
    let server = rewriter.serve().await;
    let (host, records) = host_with(&[("rewriter", &server)]);
    let session = host.session("s-transform").unwrap();
    session.start(["bash"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let mut invoked = Vec::new();
    let mut run_tool = |args: &Value| invoked.push(args.clone());
    let decision = session.pre_tool_call(&bash("rm -rf /")).await.unwrap();
    assert!(decision.proceeds());
    run_tool(decision.target().unwrap());
    assert_eq!(invoked, [json!({"cmd": "echo refused", "timeout_s": 30})]);

    let rec = records.session("s-transform").pop().unwrap();
    assert_eq!(rec.verdict.decision, Decision::Transform);
    assert_eq!(rec.verdict.transform.as_ref().unwrap().path, "$target.cmd");
    assert_eq!(
        rec.verdict.transform.as_ref().unwrap().value,
        Value::Null,
        "record is payload-free"
    );
    assert_ne!(rec.input_identity, rec.enforced_identity);
    server.shutdown().await.unwrap();
}

/// allow, deny and transform at each point whose target may be rewritten.
#[tokio::test]
async fn allow_deny_transform_at_every_transformable_point() {
    let server = Scripted::new("by-point", |ctx| {
        let mode = ctx
            .get("extensions")
            .and_then(|e| e["test"]["mode"].as_str())
            .unwrap_or("allow");
        match mode {
            "deny" => Verdict::deny("test:deny"),
            "transform" => Verdict::transform("$target", transformed_target(ctx.point())),
            _ => Verdict::allow(),
        }
    })
    .serve()
    .await;
    for mode in ["allow", "deny", "transform"] {
        let (host, _) = host_with(&[("by-point", &server)]);
        let mut members = Map::new();
        members.insert("extensions".into(), json!({"test": {"mode": "allow"}}));
        let session = host.session_with(format!("s-{mode}"), members).unwrap();
        session.start(["bash"]).await.unwrap();
        // Switch the service's behaviour per emission through an extension.
        let set = |point| {
            let mut m = Map::new();
            m.insert("extensions".into(), json!({"test": {"mode": mode}}));
            (point, m)
        };
        let emissions = vec![
            emit(&session, set(InterceptionPoint::Input), json!({"input": {"content": "hi", "role": "user"}})).await,
            emit(&session, set(InterceptionPoint::PreModelCall), json!({"model": {"id": "m"}, "messages": [{"role": "user", "content": "hi"}]})).await,
            emit(&session, set(InterceptionPoint::PostModelCall), json!({"model": {"id": "m"}, "response": {"content": "x", "tool_calls": [], "finish_reason": "stop"}})).await,
            emit(&session, set(InterceptionPoint::PreToolCall), json!({"tool_call": {"id": "c", "name": "bash", "args": {"cmd": "ls"}}})).await,
            emit(&session, set(InterceptionPoint::PostToolCall), json!({"tool_call": {"id": "c", "name": "bash", "args": {"cmd": "ls"}}, "tool_result": {"value": "out", "is_error": false}})).await,
            emit(&session, set(InterceptionPoint::Output), json!({"output": {"content": "bye"}})).await,
        ];
        for e in emissions {
            let point = e.record().interception_point;
            match mode {
                "allow" => assert!(
                    e.proceeds() && e.verdict().decision == Decision::Allow,
                    "{point}"
                ),
                "deny" => {
                    assert!(!e.proceeds(), "{point}");
                    assert_eq!(e.reason(), Some("test:deny"));
                    assert_eq!(e.record().decided_by, Some(0));
                }
                _ => {
                    assert!(e.proceeds(), "{point}");
                    assert_eq!(e.target(), Some(&transformed_target(point)), "{point}");
                }
            }
        }
    }
    server.shutdown().await.unwrap();
}

fn transformed_target(point: InterceptionPoint) -> Value {
    match point {
        InterceptionPoint::Input => json!({"content": "[redacted]", "role": "user"}),
        InterceptionPoint::PreModelCall => json!([{"role": "system", "content": "be safe"}]),
        InterceptionPoint::PostModelCall => {
            json!({"content": "rewritten", "tool_calls": [], "finish_reason": "stop"})
        }
        InterceptionPoint::PreToolCall => json!({"cmd": "echo safe"}),
        InterceptionPoint::PostToolCall => json!({"redacted": true, "n": 9_007_199_254_740_991u64}),
        _ => json!({"content": "rewritten output"}),
    }
}

async fn emit(
    session: &hookwire_client::Session,
    (point, mut members): (InterceptionPoint, Map<String, Value>),
    conditional: Value,
) -> hookwire_client::Emission {
    members.extend(conditional.as_object().unwrap().clone());
    session.emit(point, members).await.unwrap()
}

#[tokio::test]
async fn transforms_at_session_boundaries_are_forbidden() {
    let server = Scripted::new("boundary", |ctx| match ctx.point() {
        InterceptionPoint::AgentStartup | InterceptionPoint::AgentShutdown => {
            Verdict::transform("$target", json!({}))
        }
        _ => Verdict::allow(),
    })
    .serve()
    .await;
    let (host, _) = host_with(&[("boundary", &server)]);
    let session = host.session("s-boundary").unwrap();
    let start = session.start(["bash"]).await.unwrap();
    assert!(!start.proceeds());
    assert_eq!(
        start.reason(),
        Some("host_error:transform_target_forbidden")
    );
    // §6.1a: nothing but shutdown after a denied startup, with reason error.
    assert!(session.input(json!("x"), InputRole::User).await.is_err());
    let end = session.shutdown(ShutdownReason::Completed).await.unwrap();
    assert_eq!(end.reason(), Some("host_error:transform_target_forbidden"));
    assert_eq!(
        end.context().get("summary"),
        Some(&json!({"reason": "error"}))
    );
    server.shutdown().await.unwrap();
}
