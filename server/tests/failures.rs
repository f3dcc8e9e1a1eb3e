//! Failures stay at the call that caused them: a panicking hook, an
//! invalid context and a timed-out call each fail alone, and the server
//! keeps serving.

use crate::common;

use std::time::Duration;

use common::{call, connect, core, decision, request};
use hookwire::InterceptionPoint;
use hookwire::pb;
use hookwire_server::prelude::*;
use serde_json::json;
use tonic::Code;

/// Panics at `input`, allows elsewhere.
struct Fragile;

#[async_trait]
impl Interceptor for Fragile {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("fragile", "0.1.0")
    }
    async fn input(&self, ctx: &AgentContext) -> Verdict {
        panic!("hook bug at sequence {}", ctx.sequence());
    }
}

#[tokio::test]
async fn a_panicking_hook_fails_its_call_and_the_server_keeps_serving() {
    let server = spawn_local(Fragile).await.unwrap();
    let mut client = connect(server.endpoint()).await;

    for _ in 0..2 {
        let status = call(&mut client, request(InterceptionPoint::Input))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "interceptor panicked");

        let next = call(&mut client, request(InterceptionPoint::Output))
            .await
            .unwrap();
        assert_eq!(decision(&next), pb::Decision::Allow);
    }

    // A fresh connection is served too.
    let mut other = connect(server.endpoint()).await;
    let next = call(&mut other, request(InterceptionPoint::PreToolCall))
        .await
        .unwrap();
    assert_eq!(decision(&next), pb::Decision::Allow);
    server.shutdown().await.unwrap();
}

/// Panics while describing itself.
struct NoManifest;

#[async_trait]
impl Interceptor for NoManifest {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        panic!("manifest bug")
    }
}

#[tokio::test]
async fn a_panicking_manifest_fails_describe_only() {
    let server = spawn_local(NoManifest).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    let status = client.describe(pb::DescribeRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::Internal);
    let next = call(&mut client, request(InterceptionPoint::Input))
        .await
        .unwrap();
    assert_eq!(decision(&next), pb::Decision::Allow);
    server.shutdown().await.unwrap();
}

/// Must never be reached by an invalid request.
struct Unreachable;

#[async_trait]
impl Interceptor for Unreachable {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("unreachable", "0.1.0")
    }
    async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
        panic!("a hook ran on an invalid context")
    }
}

#[tokio::test]
async fn an_invalid_context_is_invalid_argument_without_values() {
    let server = spawn_local(Unreachable).await.unwrap();
    let mut client = connect(server.endpoint()).await;
    let secret = "s3cr3t-value";

    let no_core = pb::PreToolCallRequest {
        core: None,
        tool_call: Some(pb::ToolCall {
            id: "call-1".into(),
            name: "shell".into(),
            args: common::jv(json!({"password": secret})),
            content_hash: None,
        }),
        optional: None,
    };
    let bad_role = pb::InputRequest {
        core: core(1),
        input: common::jv(json!({"content": secret, "role": secret})),
        optional: None,
    };
    let bad_json = pb::OutputRequest {
        core: core(1),
        output: Some(pb::JsonValue {
            json: format!("{{\"content\": \"{secret}\""),
        }),
        optional: None,
    };

    let statuses = [
        client.pre_tool_call(no_core).await.unwrap_err(),
        client.input(bad_role).await.unwrap_err(),
        client.output(bad_json).await.unwrap_err(),
    ];
    for status in statuses {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().starts_with("invalid agent context"));
        assert!(!status.message().contains(secret), "{}", status.message());
    }
    server.shutdown().await.unwrap();
}

/// Takes longer than the server allows at `output`.
struct Slow;

#[async_trait]
impl Interceptor for Slow {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("slow", "0.1.0")
    }
    async fn output(&self, _ctx: &AgentContext) -> Verdict {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Verdict::allow()
    }
}

#[tokio::test]
async fn a_call_over_the_timeout_is_cancelled() {
    let server = Server::builder()
        .timeout(Duration::from_millis(200))
        .service(Slow)
        .spawn_local()
        .await
        .unwrap();
    let mut client = connect(server.endpoint()).await;
    let status = call(&mut client, request(InterceptionPoint::Output))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Cancelled, "{status:?}");

    let next = call(&mut client, request(InterceptionPoint::Input))
        .await
        .unwrap();
    assert_eq!(decision(&next), pb::Decision::Allow);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_request_over_the_size_bound_is_out_of_range_and_fails_alone() {
    let server = Server::builder()
        .max_message_size(1024)
        .service(Unreachable)
        .spawn_local()
        .await
        .unwrap();
    let mut client = connect(server.endpoint()).await;
    let mut big = common::pre_tool_call();
    big.tool_call.as_mut().unwrap().args = common::jv(json!({"cmd": "x".repeat(4096)}));
    let status = client.pre_tool_call(big).await.unwrap_err();
    // tonic's status for an oversized message; the host fails it closed as
    // it does every error status.
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");

    // The hook was never reached, and a small request is still decoded
    // (and reaches the hook, which is why this one panics there).
    let next = client.pre_tool_call(common::pre_tool_call()).await;
    assert_eq!(next.unwrap_err().code(), Code::Internal);
    server.shutdown().await.unwrap();
}
