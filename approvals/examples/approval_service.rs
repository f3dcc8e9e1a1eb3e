//! A demo of the approval service on loopback: the same library
//! `hookwire approvals serve` runs (see docs/approvals.md for the real
//! command, its access list and TLS), with a throwaway access list made up
//! at start: one host and one approver, each with a fresh token.
//!
//! ```text
//! cargo run -p hookwire-approvals --example approval_service -- --grpc 127.0.0.1:50061 --web 127.0.0.1:50062 --demo
//! ```
//!
//! It prints the approver's token: sign in to the page
//! (`http://127.0.0.1:50062/`) with it, or decide from a terminal
//! (`HOOKWIRE_APPROVER_TOKEN=... hookwire approvals list`, then `approve ID`
//! or `reject ID --reason TEXT`).
//! With `--demo` it also runs, in the same process, an escalating policy
//! service and an agent (authenticated with the host token) whose
//! `wire_transfer` calls over 50 need approval: one request every few
//! seconds, so there is always something to decide.
//! With `--metrics-addr 127.0.0.1:9461` it serves the service's Prometheus
//! metrics (`hookwire_approval_*`) at `http://127.0.0.1:9461/metrics`.
//! Stop it with Ctrl-C.

use std::error::Error;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use hookwire_approvals::auth::new_token;
use hookwire_approvals::{Access, AccessConfig, ApprovalServer, ApproverConfig, PrincipalConfig};
use hookwire_client::{Host, InputRole, StreamResolver, ToolCall};
use hookwire_server::metrics::{SharedRegistry, serve_metrics};
use hookwire_server::prelude::*;
use serde_json::{Value, json};

/// Escalates transfers over 50 to a human.
struct TransferPolicy;

#[async_trait]
impl Interceptor for TransferPolicy {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        let mut m = manifest("demo-transfer-policy", env!("CARGO_PKG_VERSION"));
        m.points = vec![InterceptionPoint::PreToolCall];
        m.description = "transfers over 50 need a human".into();
        m
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Verdict {
        let amount = ctx
            .target()
            .and_then(|a| a.get("amount"))
            .and_then(Value::as_u64)
            .unwrap_or_default();
        if ctx.tool_name() == Some("wire_transfer") && amount > 50 {
            Verdict::escalate("demo:large_transfer")
                .with_message(format!("a transfer of {amount} needs a human"))
        } else {
            Verdict::allow()
        }
    }
}

/// An agent asking for one transfer after another, each waiting on a
/// human.
async fn demo_agent(
    approvals: String,
    host_token: String,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let policy = spawn_local(TransferPolicy).await?;
    let deadline = Duration::from_secs(120);
    let resolver = StreamResolver::builder(approvals)
        .deadline(deadline)
        .host_name("demo-agent")
        .bearer_token(host_token)
        .build()?;
    let host = Host::builder("demo-agent", "hookwire")
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        .build()?;
    for n in 1u64.. {
        let host = host.clone();
        tokio::spawn(async move {
            let session = host.session(format!("demo-{n}"))?;
            session.start(["wire_transfer"]).await?;
            session
                .input(json!(format!("pay supplier {}", n % 3)), InputRole::User)
                .await?;
            let args = json!({"amount": 40 + n * 15, "to": format!("supplier-{}", n % 3)});
            let e = session
                .pre_tool_call(&ToolCall::new(format!("tc-{n}"), "wire_transfer", args))
                .await?;
            println!(
                "demo-{n}: {} ({})",
                if e.proceeds() {
                    "transfer sent"
                } else {
                    "transfer blocked"
                },
                e.reason().unwrap_or("allowed")
            );
            Ok::<_, hookwire_client::Error>(())
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    Ok(())
}

/// The approval service and its web page on loopback, with a throwaway
/// access list (one host, one approver, fresh tokens).
#[derive(Debug, Parser)]
#[command(
    name = "approval_service",
    after_help = "Example:\n  cargo run -p hookwire-approvals --example approval_service -- --demo --metrics-addr 127.0.0.1:9461"
)]
struct Args {
    /// The gRPC address hosts and approvers connect to.
    #[arg(long, default_value = "127.0.0.1:50061", value_name = "ADDR")]
    grpc: SocketAddr,
    /// The approval page's address.
    #[arg(long, default_value = "127.0.0.1:50062", value_name = "ADDR")]
    web: SocketAddr,
    /// Also run an escalating policy and an agent asking for approvals.
    #[arg(long)]
    demo: bool,
    /// Serve the service's Prometheus metrics at `GET /metrics` here.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("approval_service: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until Ctrl-C.
async fn run(args: Args) -> Result<(), Box<dyn Error + Send + Sync>> {
    let Args {
        grpc,
        web,
        demo,
        metrics_addr: metrics,
    } = args;
    // A throwaway access list: the service keeps only the tokens' hashes.
    let (host_token, approver_token) = (new_token()?, new_token()?);
    let access = Access::new(
        &AccessConfig::default()
            .host(PrincipalConfig::token("demo-agent", &host_token))
            .approver(ApproverConfig::token("demo-approver", &approver_token)),
    )?;
    let registry: SharedRegistry = Arc::default();
    let mut server = ApprovalServer::new(access);
    if let Some(addr) = metrics {
        server = {
            let mut guard = registry.lock().map_err(|_| "registry poisoned")?;
            server.metrics(&mut guard)
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| hookwire_server::Error::Bind { addr, source })?;
        println!(
            "metrics:          http://{}/metrics",
            listener.local_addr()?
        );
        tokio::spawn(serve_metrics(listener, registry, std::future::pending()));
    }
    let running = server.spawn(grpc, Some(web)).await?;
    println!("approval service: {}", running.endpoint());
    println!(
        "approval page:    {}",
        running.web_url().unwrap_or_default()
    );
    // A demo on loopback: the operator is the approver, so the token is
    // shown once here; a real service never prints or logs tokens.
    println!("approver token (demo-approver): {approver_token}");
    if demo {
        let endpoint = running.endpoint();
        tokio::spawn(async move {
            if let Err(e) = demo_agent(endpoint, host_token).await {
                eprintln!("demo agent failed: {e}");
            }
        });
    }
    tokio::signal::ctrl_c().await?;
    running.shutdown().await?;
    Ok(())
}
