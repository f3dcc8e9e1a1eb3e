//! Shared fixtures: one valid wire request per point, a client, and a call
//! helper that routes a `PointRequest` to its RPC.

#![allow(dead_code, missing_docs)]

use hookwire::InterceptionPoint;
use hookwire::pb;
use hookwire::pb::interceptor_client::InterceptorClient;
use hookwire::wire::PointRequest;
use serde_json::{Value, json};
use tonic::transport::Channel;

pub fn jv(value: Value) -> Option<pb::JsonValue> {
    Some(pb::JsonValue {
        json: value.to_string(),
    })
}

pub fn core(sequence: u64) -> Option<pb::ContextCore> {
    Some(pb::ContextCore {
        spec: "agent-hooks/0.1".into(),
        timestamp: "2025-01-01T00:00:00Z".into(),
        sequence,
        agent: Some(pb::Agent {
            id: "agent-1".into(),
            framework: "test".into(),
            ..Default::default()
        }),
        session: Some(pb::Session {
            id: "session-1".into(),
            ..Default::default()
        }),
    })
}

fn model() -> Option<pb::Model> {
    Some(pb::Model {
        id: "model-1".into(),
        ..Default::default()
    })
}

fn tool_call() -> Option<pb::ToolCall> {
    Some(pb::ToolCall {
        id: "call-1".into(),
        name: "shell".into(),
        args: jv(json!({"cmd": "ls", "n": 1})),
        content_hash: None,
    })
}

pub fn pre_tool_call() -> pb::PreToolCallRequest {
    pb::PreToolCallRequest {
        core: core(5),
        tool_call: tool_call(),
        optional: None,
    }
}

/// A valid request for `point`.
pub fn request(point: InterceptionPoint) -> PointRequest {
    use InterceptionPoint::*;
    match point {
        AgentStartup => PointRequest::AgentStartup(pb::AgentStartupRequest {
            core: core(0),
            agent_init: jv(json!({"tools_registered": ["shell"]})),
            optional: None,
        }),
        Input => PointRequest::Input(pb::InputRequest {
            core: core(1),
            input: jv(json!({"content": "hello", "role": "user"})),
            optional: None,
        }),
        PreModelCall => PointRequest::PreModelCall(pb::PreModelCallRequest {
            core: core(2),
            model: model(),
            messages: jv(json!([{"role": "user", "content": "hello"}])),
            model_call: None,
            optional: None,
        }),
        PostModelCall => PointRequest::PostModelCall(pb::PostModelCallRequest {
            core: core(3),
            model: model(),
            response: jv(json!({"content": "hi", "tool_calls": [], "finish_reason": "stop"})),
            model_call: None,
            optional: None,
        }),
        PreToolCall => PointRequest::PreToolCall(pre_tool_call()),
        PostToolCall => PointRequest::PostToolCall(pb::PostToolCallRequest {
            core: core(6),
            tool_call: tool_call(),
            tool_result: Some(pb::ToolResult {
                value: jv(json!("file.txt")),
                is_error: false,
                ..Default::default()
            }),
            optional: None,
        }),
        Output => PointRequest::Output(pb::OutputRequest {
            core: core(7),
            output: jv(json!({"content": "done"})),
            optional: None,
        }),
        AgentShutdown => PointRequest::AgentShutdown(pb::AgentShutdownRequest {
            core: core(8),
            summary: jv(json!({"reason": "completed"})),
            optional: None,
        }),
    }
}

pub async fn connect(endpoint: String) -> InterceptorClient<Channel> {
    InterceptorClient::connect(endpoint)
        .await
        .expect("connect to the test server")
}

/// Sends `request` through the RPC of its point.
pub async fn call(
    client: &mut InterceptorClient<Channel>,
    request: PointRequest,
) -> Result<pb::InterceptorResponse, tonic::Status> {
    let response = match request {
        PointRequest::AgentStartup(r) => client.agent_startup(r).await,
        PointRequest::Input(r) => client.input(r).await,
        PointRequest::PreModelCall(r) => client.pre_model_call(r).await,
        PointRequest::PostModelCall(r) => client.post_model_call(r).await,
        PointRequest::PreToolCall(r) => client.pre_tool_call(r).await,
        PointRequest::PostToolCall(r) => client.post_tool_call(r).await,
        PointRequest::Output(r) => client.output(r).await,
        PointRequest::AgentShutdown(r) => client.agent_shutdown(r).await,
    };
    response.map(tonic::Response::into_inner)
}

pub fn decision(response: &pb::InterceptorResponse) -> pb::Decision {
    let verdict = response.verdict.as_ref().expect("a verdict");
    pb::Decision::try_from(verdict.decision).expect("a known decision")
}

pub fn reason(response: &pb::InterceptorResponse) -> Option<&str> {
    response.verdict.as_ref()?.reason.as_deref()
}
