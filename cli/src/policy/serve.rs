//! `hookwire policy serve`: the policy set as an interceptor service, its
//! reloads and its metrics endpoint.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};

use hookwire_policy::{Policies, PolicyOptions, PolicyService, ReloadEvent};
use hookwire_server::Server;
use hookwire_server::metrics::{ServerMetrics, SharedRegistry};
use tokio::net::TcpListener;

use crate::error::CliError;
use crate::metrics_endpoint::{self, MetricsEndpoint};

/// Serves the policies of `dir` until Ctrl-C, and the service's metrics
/// at `metrics_addr` when given.
pub(super) async fn serve(
    dir: PathBuf,
    addr: SocketAddr,
    no_watch: bool,
    metrics_addr: Option<SocketAddr>,
    options: PolicyOptions,
) -> Result<(), CliError> {
    let policies = Policies::load(dir, options)?;
    let set = policies.current();
    for package in set.packages() {
        let points: Vec<&str> = package.points.iter().map(|p| p.as_str()).collect();
        println!("{:<40} at {}", package.name, points.join(", "));
    }
    let _watcher = if no_watch {
        None
    } else {
        Some(policies.watch(|event| match event {
            ReloadEvent::Reloaded {
                generation,
                packages,
            } => eprintln!(
                "policies reloaded: generation {generation}, {packages} decision packages"
            ),
            ReloadEvent::Rejected { serving, error } => {
                eprintln!("policy reload rejected (generation {serving} keeps serving): {error}");
            }
        })?)
    };
    let service = PolicyService::new(policies).on_failure(|ctx, error| {
        eprintln!(
            "decision failed at {} (seq {}): {error}",
            ctx.point(),
            ctx.sequence()
        );
    });
    let registry: SharedRegistry = Arc::default();
    let mut server = Server::builder();
    if metrics_addr.is_some() {
        server = server.metrics(ServerMetrics::register(
            &mut registry.lock().unwrap_or_else(PoisonError::into_inner),
        ));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| hookwire_server::Error::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(hookwire_server::Error::LocalAddr)?;
    let metrics_listener = metrics_endpoint::bind(metrics_addr).await?;
    let metrics = MetricsEndpoint::serve(metrics_listener, registry, "policy metrics: ")?;
    println!(
        "policy serving {} on http://{bound} (Ctrl-C to stop)",
        set.dir().display()
    );
    let served = server
        .service(service)
        .serve_with_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    let stopped = metrics.stop().await;
    served?;
    stopped
}
