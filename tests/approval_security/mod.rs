//! The approval service under attack, with real servers on 127.0.0.1:
//! every refusal (no token, forged, expired or revoked token, an approver
//! outside its rules, a host credential deciding or watching, an approver
//! credential submitting) on gRPC and on the page's API, each leaving the
//! queue unchanged; no token or hash in any log line or error; TLS with the
//! wrong authority failing closed, and mTLS naming an approver; a rogue
//! service's oversized message failing the host closed; a declared
//! `approval_resolver_ms` reaching the service as the request's deadline.

mod refusals;
mod revocation;
mod transport;

use hookwire_testkit as common;

use crate::approval_common;

use std::time::{Duration, Instant};

use hookwire::approval::{ApprovalRequest, ApprovalResolution, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire::{AgentContext, InterceptionPoint, Verdict};
use hookwire_approvals::auth::token_sha256;
use hookwire_approvals::{
    Acceptance, Access, ApprovalQueue, ApproverConfig, HistoryQuery, HostLink, PrincipalConfig,
    ServiceTls,
};
use hookwire_client::declaration::{Declaration, Registry};
use hookwire_client::{ApprovalResolver, Host, InputRole, StreamResolver, TlsConfig, ToolCall};
use hookwire_testkit::rogue::RogueApprovals;
use hookwire_testkit::tls::{Authority, SanType};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status};

use approval_common::{APPROVERS, HOST_TOKEN, bearer, token_of};

const LONG: Duration = Duration::from_secs(60);
const OLD_TOKEN: &str = "hwa_test_expired_0123456789abcdef0123456789ab";
const GONE_TOKEN: &str = "hwa_test_revoked_0123456789abcdef0123456789ab";
const FORGED_TOKEN: &str = "hwa_forged_0123456789abcdef0123456789abcdef0123";

/// The shared test access list plus an expired and a revoked approver.
fn access() -> Access {
    let config = approval_common::access_config()
        .approver(ApproverConfig::from(
            PrincipalConfig::token("old", OLD_TOKEN).expires_at("2020-01-01T00:00:00Z"),
        ))
        .approver(ApproverConfig::token("gone", GONE_TOKEN))
        .revoke(GONE_TOKEN);
    Access::new(&config).expect("access list")
}

fn request(tool: &str, reason: &str) -> ApprovalRequest {
    let mut ctx = common::context_json(InterceptionPoint::PreToolCall);
    ctx.insert(
        "tool_call".into(),
        json!({"id": "tc", "name": tool, "args": {"amount": 100}}),
    );
    ApprovalRequest {
        context_identity: None,
        interception_point: InterceptionPoint::PreToolCall,
        verdict: Verdict::escalate(reason),
        context: AgentContext::from_json(Value::Object(ctx)).expect("context"),
    }
}

/// Two pending requests from an in-process host: one inside `payments`'
/// rules, one outside.
fn submit_two(queue: &ApprovalQueue) -> (HostLink, String, String) {
    let (link, _deliveries) = queue.connect_host("test-host");
    let inside = link
        .submit("in", request("wire_transfer", "payments.large"), LONG)
        .unwrap();
    let outside = link
        .submit("out", request("delete_account", "accounts.close"), LONG)
        .unwrap();
    (link, inside, outside)
}

fn decide_request(id: &str, approver_field: &str) -> pb::DecideRequest {
    let r = request("wire_transfer", "x");
    pb::DecideRequest {
        approver: approver_field.into(),
        resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
            request_id: id.into(),
            approver: String::new(),
            resolution: ApprovalResolution::approve(&r, Verdict::allow()),
        })),
    }
}

/// What the queue looks like: ids, who has seen them.
fn snapshot(queue: &ApprovalQueue) -> Vec<(String, Vec<String>)> {
    queue
        .pending()
        .into_iter()
        .map(|p| (p.id, p.seen_by))
        .collect()
}

/// A raw HTTP/1.1 exchange with the page: the status, the headers and the
/// body.
async fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}
