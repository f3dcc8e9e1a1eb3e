//! `hookwire policy serve`: the policy set as an interceptor service, its
//! reloads (a directory watched, or a bundle polled), its decision log,
//! its metrics and status endpoint, over TLS when asked.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hookwire_policy::bundle::{BundleEvent, Bundles, Poller};
use hookwire_policy::decision_log::DecisionLog;
use hookwire_policy::metrics::PolicyMetrics;
use hookwire_policy::{Policies, PolicyOptions, PolicyService, ReloadEvent, Watcher, status};
use hookwire_server::Server;
use hookwire_server::metrics::{JsonRoute, ServerMetrics, SharedRegistry};
use hookwire_telemetry::Telemetry;
use tokio::net::TcpListener;

use super::ops::OpsArgs;
use crate::args::ListenAddr;
use crate::error::CliError;
use crate::metrics_endpoint::{self, MetricsEndpoint};

/// What `policy serve` was asked to do.
pub(crate) struct ServeRequest {
    /// The policy directory (unless a bundle).
    pub(crate) dir: Option<PathBuf>,
    /// The gRPC address: TCP, or an owner-only Unix socket.
    pub(crate) addr: ListenAddr,
    /// Do not watch the directory.
    pub(crate) no_watch: bool,
    /// The metrics and status address.
    pub(crate) metrics_addr: Option<SocketAddr>,
    /// Evaluation options.
    pub(crate) options: PolicyOptions,
    /// The operator flags.
    pub(crate) ops: OpsArgs,
}

/// Serves the policies until Ctrl-C or SIGTERM, with the decision log, metrics,
/// status and TLS the request asks for.
pub(crate) async fn serve(
    request: ServeRequest,
    telemetry: Option<&Telemetry>,
) -> Result<(), CliError> {
    let ServeRequest {
        dir,
        addr,
        no_watch,
        metrics_addr,
        options,
        ops,
    } = request;
    if matches!(addr, ListenAddr::Unix(_)) && ops.tls.enabled() {
        return Err(CliError::PolicyServe(
            "TLS applies to TCP addresses: a unix:/path socket is authenticated by its permissions"
                .into(),
        ));
    }
    let registry: SharedRegistry = Arc::default();
    let (server_metrics, policy_metrics) = match metrics_addr {
        Some(_) => {
            let mut registry = registry.lock().unwrap_or_else(PoisonError::into_inner);
            (
                Some(ServerMetrics::register(&mut registry)),
                Some(PolicyMetrics::register(&mut registry)),
            )
        }
        None => (None, None),
    };
    let log = ops.log.start(
        telemetry,
        policy_metrics
            .as_ref()
            .map(PolicyMetrics::decision_log_dropped),
    )?;

    let (policies, bundles) = match (&ops.bundle.bundle, dir) {
        (Some(location), _) => {
            let bundles = Bundles::new(location, ops.bundle.options(options)?)?;
            let policies = bundles.activate_first().await?;
            let status = bundles.status();
            outln!(
                "bundle {location} activated (revision {})",
                status.active_revision.as_deref().unwrap_or("")
            );
            (policies, Some(bundles))
        }
        (None, Some(dir)) => (Policies::load(dir, options)?, None),
        (None, None) => {
            return Err(CliError::PolicyServe(
                "give a policy directory or --bundle".into(),
            ));
        }
    };
    let set = policies.current();
    for package in set.packages() {
        let points: Vec<&str> = package.points.iter().map(|p| p.as_str()).collect();
        outln!("{:<40} at {}", package.name, points.join(", "));
    }
    if let Some(m) = &policy_metrics {
        m.record_reload(&policies.status());
        if let Some(b) = &bundles {
            m.record_bundle(&b.status());
        }
    }
    // Kept while serving: dropping either stops the reloads.
    let _poller: Option<Poller> = bundles
        .as_ref()
        .map(|b| poll_bundle(b, &policies, &ops, policy_metrics.clone()));
    let _watcher: Option<Watcher> = match &bundles {
        None if !no_watch => Some(watch_dir(&policies, policy_metrics.clone())?),
        _ => None,
    };

    let mut service = PolicyService::new(Arc::clone(&policies)).on_failure(|ctx, error| {
        errln!(
            "decision failed at {} (seq {}): {error}",
            ctx.point(),
            ctx.sequence()
        );
    });
    if let Some(m) = &policy_metrics {
        service = service.observe(Arc::new(m.clone()));
    }
    if let Some(log) = &log {
        service = service.observe(Arc::clone(log) as Arc<_>);
    }
    let mut server = ops.tls.apply(Server::builder())?;
    if let Some(m) = server_metrics {
        server = server.metrics(m);
    }
    // Bound before anything else serves, so a busy port or a refused
    // socket fails the command at once, and the banner names a socket
    // that accepts.
    let bound = match addr {
        ListenAddr::Tcp(addr) => Bound::Tcp(
            TcpListener::bind(addr)
                .await
                .map_err(|source| hookwire_server::Error::Bind { addr, source })?,
        ),
        ListenAddr::Unix(path) => Bound::Unix(
            hookwire_edge::unix::UnixSocket::bind(&path).map_err(hookwire_server::Error::from)?,
        ),
    };
    let metrics_listener = metrics_endpoint::bind(metrics_addr).await?;
    let routes = vec![status_route(&policies, bundles.clone(), log.clone())];
    let metrics = MetricsEndpoint::serve_with(
        metrics_listener,
        registry,
        "policy metrics: ",
        false,
        routes,
    )?;
    let router = server.service(service);
    let stop = async {
        crate::shutdown::requested().await;
    };
    let served = match bound {
        Bound::Tcp(listener) => {
            let bound = listener
                .local_addr()
                .map_err(hookwire_server::Error::LocalAddr)?;
            let scheme = if ops.tls.enabled() { "https" } else { "http" };
            outln!(
                "policy serving {} on {scheme}://{bound} (Ctrl-C to stop)",
                set.dir().display()
            );
            router.serve_with_listener(listener, stop).await
        }
        Bound::Unix(socket) => {
            outln!(
                "policy serving {} on unix:{} (Ctrl-C to stop)",
                set.dir().display(),
                socket.path().display()
            );
            router.serve_unix_socket(socket, stop).await
        }
    };
    let stopped = metrics.stop().await;
    if let Some(log) = &log {
        close_log(log);
    }
    served?;
    stopped
}

/// Where the service listens, bound or about to be.
enum Bound {
    /// A bound TCP listener.
    Tcp(TcpListener),
    /// A bound owner-only Unix socket.
    Unix(hookwire_edge::unix::UnixSocket),
}

/// `GET /status`: the status document.
fn status_route(
    policies: &Arc<Policies>,
    bundles: Option<Arc<Bundles>>,
    log: Option<Arc<DecisionLog>>,
) -> JsonRoute {
    let policies = Arc::clone(policies);
    (
        "/status",
        Arc::new(move || {
            let bundle = bundles.as_ref().map(|b| b.status());
            status::document(&policies, bundle.as_ref(), log.as_deref()).to_string()
        }),
    )
}

/// Reloads the directory on changes, printing each attempt.
fn watch_dir(
    policies: &Arc<Policies>,
    metrics: Option<PolicyMetrics>,
) -> Result<Watcher, CliError> {
    let watched = Arc::downgrade(policies);
    Ok(policies.watch(move |event| {
        match event {
            ReloadEvent::Reloaded {
                generation,
                packages,
            } => errln!("policies reloaded: generation {generation}, {packages} decision packages"),
            ReloadEvent::Rejected { serving, error } => {
                errln!("policy reload rejected (generation {serving} keeps serving): {error}");
            }
        }
        if let (Some(m), Some(policies)) = (&metrics, watched.upgrade()) {
            m.record_reload(&policies.status());
        }
    })?)
}

/// Polls the bundle, printing each activation and refusal.
fn poll_bundle(
    bundles: &Arc<Bundles>,
    policies: &Arc<Policies>,
    ops: &OpsArgs,
    metrics: Option<PolicyMetrics>,
) -> Poller {
    let every = Duration::from_millis(ops.bundle.bundle_poll_ms.max(10));
    let watched = Arc::downgrade(policies);
    let observed = Arc::downgrade(bundles);
    bundles.poll(Arc::clone(policies), every, move |event| {
        match event {
            BundleEvent::Activated {
                revision,
                generation,
            } => errln!("bundle activated: revision {revision}, generation {generation}"),
            BundleEvent::NotModified => {}
            BundleEvent::Failed { error } => {
                errln!("bundle refused (the serving policies keep serving): {error}");
            }
        }
        if let (Some(m), Some(policies), Some(bundles)) =
            (&metrics, watched.upgrade(), observed.upgrade())
        {
            m.record_reload(&policies.status());
            m.record_bundle(&bundles.status());
        }
    })
}

/// Writes what the decision log still holds and says what it did.
fn close_log(log: &DecisionLog) {
    let summary = log.close();
    errln!(
        "decision log: {} written, {} dropped (buffer full), {} failed to write, {} unwritten at shutdown",
        summary.written,
        summary.dropped,
        summary.failed,
        summary.unwritten
    );
}
