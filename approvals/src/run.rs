//! [`run`]: the approval service served from [`Settings`] until a shutdown
//! future resolves: the gRPC service and its page, the notification
//! channels, the metrics endpoint, then a graceful shutdown (a shared
//! queue's hosts detached, for them to re-attach on another instance).
//! Everything `hookwire approvals serve` does after merging its config
//! file and flags, so that the service can be embedded and tested without
//! the command; the lines it prints are the command's.

use std::future::Future;
use std::sync::{Arc, PoisonError};

use hookwire_server::metrics::{MetricsTask, SharedRegistry};
use tokio::net::TcpListener;

use crate::error::Error;
use crate::queue::ApprovalQueue;
use crate::serve::ApprovalServer;
use crate::settings::{RawSettings, Settings};
use hookwire_server::announce::out;

/// Serves the approval service of `settings` until `shutdown` resolves,
/// then shuts it down gracefully; prints the channels, the gRPC endpoint,
/// the page's URL and the metrics address once bound.
pub async fn run(settings: Settings, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let Settings { raw, queue } = settings;
    let RawSettings {
        grpc,
        web,
        name,
        heartbeat,
        tls,
        allow_plaintext: _,
        access,
        metrics_addr,
        notify,
        webhook_tls,
    } = raw;
    let queue = queue.unwrap_or_else(ApprovalQueue::new);
    let mut server = ApprovalServer::with_queue(queue, access.clone());
    if let Some(name) = name {
        server = server.name(name);
    }
    if let Some(h) = heartbeat {
        server = server.heartbeat_interval(h);
    }
    if let Some(tls) = tls {
        server = server.tls(tls);
    }
    let registry: SharedRegistry = Arc::default();
    if metrics_addr.is_some() {
        server = server.metrics(&mut registry.lock().unwrap_or_else(PoisonError::into_inner));
    }
    if let Some(notify) = &notify {
        let notifications = notify.load(&access)?.with_tls(webhook_tls);
        notifications
            .register_metrics(&mut registry.lock().unwrap_or_else(PoisonError::into_inner));
        out(format_args!(
            "notifications:    {} channel(s)",
            notify.channels.len()
        ));
        server = server.notify(notifications);
    }
    // Bound before serving, so that a busy port fails the start.
    let metrics_listener = match metrics_addr {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .map_err(|source| hookwire_server::Error::Bind { addr, source })?,
        ),
        None => None,
    };
    let running = server.spawn(grpc, web).await?;
    out(format_args!("approval service: {}", running.endpoint()));
    if let Some(url) = running.web_url() {
        out(format_args!("approval page:    {url}"));
    }
    let metrics = match metrics_listener {
        Some(listener) => {
            let bound = listener
                .local_addr()
                .map_err(hookwire_server::Error::LocalAddr)?;
            out(format_args!("approval metrics: http://{bound}/metrics"));
            Some(MetricsTask::spawn(listener, registry, Vec::new()))
        }
        None => None,
    };
    shutdown.await;
    running.shutdown().await?;
    if let Some(m) = metrics {
        m.stop().await?;
    }
    Ok(())
}
