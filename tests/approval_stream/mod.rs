//! Approvals over the wire: a host whose approval resolver is a
//! `StreamResolver` on one gRPC stream to an approval service, with
//! approvers in process (the queue's Rust API) and over gRPC (`Watch`,
//! `Decide`). Every server is real and on 127.0.0.1.

mod approvers;
mod host_side;
mod liveness;

use hookwire_testkit as common;

use crate::approval_common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hookwire::approval::{
    ApprovalOutcome, ApprovalRequest, ApprovalResolution, StreamRequest, StreamResolution,
};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire::{InterceptionPoint, Mode, ResolvedBy, Verdict};
use hookwire_approvals::{
    ApprovalQueue, ApproverIdentity, CloseReason, QueueEvent, RunningApprovalServer,
};
use hookwire_client::{
    Emission, Host, InputRole, RecordLog, ShutdownReason, StreamResolver, ToolCall,
};
use hookwire_server::RunningServer;
use hookwire_testkit::rogue::RogueApprovals;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use approval_common::{HOST_TOKEN, bearer, token_of};
use common::Scripted;

const LONG: Duration = Duration::from_secs(60);

/// An interceptor that escalates every tool call (and, when asked, the
/// shutdown too) and allows everything else.
async fn escalating_policy(also_at_shutdown: bool) -> RunningServer {
    let points: &[InterceptionPoint] = if also_at_shutdown {
        &[
            InterceptionPoint::PreToolCall,
            InterceptionPoint::AgentShutdown,
        ]
    } else {
        &[InterceptionPoint::PreToolCall]
    };
    Scripted::escalating_at(
        "policy",
        points,
        "needs_approval",
        "a human must approve this call",
    )
    .serve()
    .await
}

/// A resolver for `approvals` with a fast reconnect.
fn resolver(approvals: &str, deadline: Duration) -> StreamResolver {
    StreamResolver::builder(approvals)
        .deadline(deadline)
        .host_name("test-host")
        .bearer_token(HOST_TOKEN)
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .expect("resolver")
}

fn host(policy: &RunningServer, resolver: StreamResolver, mode: Mode) -> (Host, RecordLog) {
    let (builder, records) = common::host();
    let deadline = resolver.deadline();
    let host = builder
        .mode(mode)
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        .build()
        .expect("host");
    (host, records)
}

async fn tool_call(host: &Host, session: &str, args: Value) -> Emission {
    let s = host.session(session).expect("session");
    s.start(["wire_transfer"]).await.expect("start");
    s.input(json!("pay"), InputRole::User).await.expect("input");
    s.pre_tool_call(&ToolCall::new("tc-1", "wire_transfer", args))
        .await
        .expect("pre_tool_call")
}

async fn approvals() -> RunningApprovalServer {
    approval_common::server()
        .heartbeat_interval(Duration::from_millis(200))
        .spawn_local()
        .await
        .expect("approval service")
}

/// Waits until `queue` holds `n` pending requests.
async fn wait_pending(queue: &ApprovalQueue, n: usize) -> Vec<hookwire_approvals::PendingApproval> {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let pending = queue.pending();
        if pending.len() >= n {
            return pending;
        }
        assert!(
            Instant::now() < until,
            "only {} of {n} requests arrived",
            pending.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Approves (with `allow`) every request that reaches `queue`.
fn auto_approve(queue: ApprovalQueue) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut sub = queue.subscribe();
        for p in sub.pending.drain(..) {
            let _ = queue
                .resolve(
                    &p.id,
                    &ApproverIdentity::in_process("robot"),
                    ApprovalResolution::approve(&p.request, Verdict::allow()),
                )
                .await;
        }
        while let Ok(e) = sub.events.recv().await {
            if let QueueEvent::Added(p) = e {
                let r = ApprovalResolution::approve(&p.request, Verdict::allow());
                let _ = queue
                    .resolve(&p.id, &ApproverIdentity::in_process("robot"), r)
                    .await;
            }
        }
    })
}
