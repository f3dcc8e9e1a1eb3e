//! Real gRPC against a real server: each point reaches its hook, defaults
//! allow, responses arrive intact, and `Describe` answers the manifest.

use crate::common;

use common::{call, connect, decision, reason, request};
use hookwire::pb;
use hookwire::{AgentContext, InterceptionPoint, Verdict, Warning};
use hookwire_server::prelude::*;
use serde_json::{Map, json};

/// Answers every hook with `allow` and a reason naming the hook and the
/// point of the context it received.
struct Named;

fn named(hook: &str, ctx: &AgentContext) -> Verdict {
    Verdict::allow().with_reason(format!("{hook}@{}", ctx.point()))
}

#[async_trait]
impl Interceptor for Named {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("named", "1.0.0")
    }
    async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
        Verdict::deny("fell_through")
    }
    async fn agent_startup(&self, ctx: &AgentContext) -> Verdict {
        named("agent_startup", ctx)
    }
    async fn input(&self, ctx: &AgentContext) -> Verdict {
        named("input", ctx)
    }
    async fn pre_model_call(&self, ctx: &AgentContext) -> Verdict {
        named("pre_model_call", ctx)
    }
    async fn post_model_call(&self, ctx: &AgentContext) -> Verdict {
        named("post_model_call", ctx)
    }
    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        named("pre_tool_call", ctx)
    }
    async fn post_tool_call(&self, ctx: &AgentContext) -> Verdict {
        named("post_tool_call", ctx)
    }
    async fn output(&self, ctx: &AgentContext) -> Verdict {
        named("output", ctx)
    }
    async fn agent_shutdown(&self, ctx: &AgentContext) -> Verdict {
        named("agent_shutdown", ctx)
    }
}

#[tokio::test]
async fn every_point_reaches_its_own_hook() {
    let server = spawn_local(Named).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    for point in InterceptionPoint::ALL {
        let response = call(&mut client, request(point)).await.unwrap();
        assert_eq!(decision(&response), pb::Decision::Allow, "{point}");
        let expected = format!("{point}@{point}");
        assert_eq!(reason(&response), Some(expected.as_str()));
    }
    server.shutdown().await.unwrap();
}

/// Overrides nothing but the manifest.
struct Silent;

#[async_trait]
impl Interceptor for Silent {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("silent", "0.0.1")
    }
}

#[tokio::test]
async fn unimplemented_hooks_allow() {
    let server = spawn_local(Silent).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    for point in InterceptionPoint::ALL {
        let response = call(&mut client, request(point)).await.unwrap();
        let verdict = InterceptorResponse::try_from(response).unwrap();
        assert_eq!(
            verdict,
            InterceptorResponse::from(Verdict::allow()),
            "{point}"
        );
    }
    server.shutdown().await.unwrap();
}

/// Overrides only `intercept`: every hook falls back to it.
struct Fallback;

#[async_trait]
impl Interceptor for Fallback {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("fallback", "0.0.1")
    }
    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        Verdict::deny(format!("seen_{}", ctx.point()))
    }
}

#[tokio::test]
async fn hooks_default_to_intercept() {
    let server = spawn_local(Fallback).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    for point in InterceptionPoint::ALL {
        let response = call(&mut client, request(point)).await.unwrap();
        assert_eq!(decision(&response), pb::Decision::Deny);
        let expected = format!("seen_{point}");
        assert_eq!(reason(&response), Some(expected.as_str()));
    }
    server.shutdown().await.unwrap();
}

/// Rewrites tool arguments and attaches a receipt extension.
struct Redactor;

fn redaction() -> InterceptorResponse {
    let mut evidence = Map::new();
    evidence.insert("digest".into(), json!("sha256:00ff"));
    let verdict = Verdict::transform(
        "$target.cmd",
        json!({
            "text": "ls \u{2603} [REDACTED]",
            "nested": [1, 2.5, "x", null, true, {"k": []}],
            "big": 9_007_199_254_740_993_u64,
            "one_float": 1.0
        }),
    )
    .with_reason("pii_redacted")
    .with_message("one secret removed")
    .with_warning(Warning {
        reason: Some("heuristic".into()),
        message: None,
    })
    .with_evidence(evidence)
    .with_label("pii");
    let mut extensions = Map::new();
    extensions.insert("acme".into(), json!({"receipt": {"id": "r-1", "count": 3}}));
    InterceptorResponse {
        verdict,
        extensions,
    }
}

#[async_trait]
impl Interceptor for Redactor {
    type Response = InterceptorResponse;
    fn manifest(&self) -> Manifest {
        manifest("redactor", "2.0.0")
    }
    async fn pre_tool_call(&self, ctx: &AgentContext) -> InterceptorResponse {
        assert_eq!(ctx.tool_name(), Some("shell"));
        assert_eq!(ctx.target(), Some(&json!({"cmd": "ls", "n": 1})));
        redaction()
    }
}

#[tokio::test]
async fn a_transform_with_extensions_arrives_intact() {
    let server = spawn_local(Redactor).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    let response = client
        .pre_tool_call(common::pre_tool_call())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(decision(&response), pb::Decision::Transform);
    let transform = response.verdict.as_ref().unwrap().transform.as_ref();
    assert_eq!(transform.unwrap().path, "$target.cmd");
    let decoded = InterceptorResponse::try_from(response).unwrap();
    assert_eq!(decoded, redaction());
    server.shutdown().await.unwrap();
}

/// Declares where it wants to be bound.
struct Declared;

#[async_trait]
impl Interceptor for Declared {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        Manifest {
            points: vec![InterceptionPoint::PreToolCall, InterceptionPoint::Output],
            description: "denies shell".into(),
            ..manifest("declared", "3.1.4")
        }
    }
}

#[tokio::test]
async fn describe_returns_the_manifest() {
    let server = spawn_local(Declared).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    let manifest = client
        .describe(pb::DescribeRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(manifest.name, "declared");
    assert_eq!(manifest.version, "3.1.4");
    assert_eq!(manifest.spec, hookwire::SPEC_VERSION);
    assert_eq!(manifest.description, "denies shell");
    assert_eq!(
        manifest.points,
        [
            pb::InterceptionPoint::PreToolCall as i32,
            pb::InterceptionPoint::Output as i32
        ]
    );
    assert_eq!(Manifest::try_from(manifest).unwrap(), Declared.manifest());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn dispatch_routes_in_process() {
    for point in InterceptionPoint::ALL {
        let pb_request = request(point);
        let ctx = hookwire::wire::context_from_request(pb_request).unwrap();
        let response = hookwire::dispatch(&Named, &ctx).await.unwrap();
        let expected = format!("{point}@{point}");
        assert_eq!(response.verdict.reason.as_deref(), Some(expected.as_str()));
    }
}
