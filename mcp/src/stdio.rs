//! The stdio downstream: this process's stdin and stdout are one MCP
//! session (newline-delimited JSON-RPC), what a client that launches its
//! servers runs. Requests are handled concurrently, notifications and
//! answers in order; EOF on stdin ends the session (`agent_shutdown`,
//! `completed`) once the requests in flight have answered.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hookwire_client::{Host, ShutdownReason};
use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::config::McpConfig;
use crate::error::Error;
use crate::jsonrpc::{self, Message};
use crate::lines::{Line, read_line};
use crate::session::McpSession;
use crate::upstream::{HttpClient, UpstreamSpec};

/// Messages queued for stdout.
const WRITE_QUEUE: usize = 256;

/// Serves one MCP session on stdin/stdout until EOF or `stop`.
pub async fn serve_stdio(
    host: Host,
    spec: UpstreamSpec,
    config: Arc<McpConfig>,
    stop: impl Future<Output = ()>,
) -> Result<(), Error> {
    let (tx, mut rx) = mpsc::channel::<Value>(WRITE_QUEUE);
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(v) = rx.recv().await {
            let mut line = hookwire::json::encode(&v).into_bytes();
            line.push(b'\n');
            if out.write_all(&line).await.and(out.flush().await).is_err() {
                return;
            }
        }
    });
    let key = format!("mcp-stdio-{}", crate::ids::random_id()?);
    let session = McpSession::open(
        &host,
        key,
        &spec,
        &HttpClient::new(&config.upstream_tls),
        config.clone(),
        Some(tx.clone()),
    )
    .await?;
    let mut tasks = JoinSet::new();
    let mut stdin = BufReader::new(tokio::io::stdin());
    let max = config.max_message_bytes;
    tokio::pin!(stop);
    let reason = loop {
        let line = tokio::select! {
            l = read_line(&mut stdin, max) => l,
            () = &mut stop => break ShutdownReason::Cancelled,
        };
        let bytes = match line {
            Ok(Line::Text(b)) => b,
            Ok(Line::Eof) => break ShutdownReason::Completed,
            Ok(Line::Oversized) => {
                count(&config, "oversized");
                let e = jsonrpc::Malformed::Oversized(max);
                let _ = tx
                    .send(jsonrpc::error_response(None, e.code(), e.to_string()))
                    .await;
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read stdin");
                break ShutdownReason::Error;
            }
        };
        match jsonrpc::decode(&bytes, max) {
            Err(e) => {
                count(&config, "malformed");
                tracing::info!(target: "hookwire_mcp::access", session = %session.key(), error = %e, "malformed message from the client");
                let _ = tx
                    .send(jsonrpc::error_response(None, e.code(), e.to_string()))
                    .await;
            }
            Ok(m @ Message::Request { .. }) => {
                // Admitted now, so that a cancellation read next finds it.
                let answering = session.begin(m, None);
                let tx = tx.clone();
                tasks.spawn(async move {
                    if let Some(answer) = answering.await {
                        let _ = tx.send(answer).await;
                    }
                });
            }
            Ok(m) => {
                session.handle(m, None).await;
            }
        }
        while tasks.try_join_next().is_some() {}
    };
    // The requests in flight answer first (each is bounded by the call
    // timeout and the host's own), unless the proxy is stopping.
    if reason != ShutdownReason::Cancelled {
        let bound = config.call_timeout + Duration::from_secs(5);
        let _ =
            tokio::time::timeout(bound, async { while tasks.join_next().await.is_some() {} }).await;
    }
    tasks.abort_all();
    session.end(reason).await;
    drop(session);
    drop(tx);
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    Ok(())
}

fn count(config: &McpConfig, outcome: &'static str) {
    if let Some(m) = &config.metrics {
        m.message("client", "unknown", outcome);
    }
}
