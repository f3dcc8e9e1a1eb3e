//! [`run`]: the policy set served as an interceptor service until a
//! shutdown future resolves: its reloads (a directory watched, or a bundle
//! polled), its decision log, its metrics and status endpoint, over TLS
//! when asked. Everything `hookwire policy serve` does after parsing its
//! flags, so that the service can be embedded and tested without the
//! command; the lines it prints are the command's.

use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hookwire_server::Server;
use hookwire_server::metrics::{JsonRoute, MetricsTask, ServerMetrics, SharedRegistry};
use tokio::net::TcpListener;

use crate::bundle::{BundleEvent, Bundles, Poller};
use crate::decision_log::{DecisionLog, JsonLines};
use crate::error::Error;
use crate::metrics::PolicyMetrics;
use crate::reload::{Policies, ReloadEvent, Watcher};
use crate::service::PolicyService;
use crate::settings::{DecisionLogSettings, DecisionLogSink, Listen, Settings, Source};
use crate::status;
use hookwire_server::announce::{err, out};

/// Serves the policies of `settings` until `shutdown` resolves, with the
/// decision log, metrics, status and TLS they ask for; prints the packages,
/// the metrics address and the serving address once bound.
pub async fn run(settings: Settings, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let Settings {
        source,
        listen,
        metrics_addr,
        options,
        decision_log,
        tls,
    } = settings;
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
    let log = match decision_log {
        Some(settings) => Some(start_log(
            settings,
            policy_metrics
                .as_ref()
                .map(PolicyMetrics::decision_log_dropped),
        )?),
        None => None,
    };

    let (policies, bundles, watch, poll) = match source {
        Source::Bundle {
            location,
            options,
            poll,
        } => {
            let bundles = Bundles::new(&location, *options)?;
            let policies = bundles.activate_first().await?;
            let status = bundles.status();
            out(format_args!(
                "bundle {location} activated (revision {})",
                status.active_revision.as_deref().unwrap_or("")
            ));
            (policies, Some(bundles), false, poll)
        }
        Source::Dir { dir, watch } => (Policies::load(dir, options)?, None, watch, Duration::ZERO),
    };
    let set = policies.current();
    for package in set.packages() {
        let points: Vec<&str> = package.points.iter().map(|p| p.as_str()).collect();
        out(format_args!(
            "{:<40} at {}",
            package.name,
            points.join(", ")
        ));
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
        .map(|b| poll_bundle(b, &policies, poll, policy_metrics.clone()));
    let _watcher: Option<Watcher> = match &bundles {
        None if watch => Some(watch_dir(&policies, policy_metrics.clone())?),
        _ => None,
    };

    let mut service = PolicyService::new(Arc::clone(&policies)).on_failure(|ctx, error| {
        err(format_args!(
            "decision failed at {} (seq {}): {error}",
            ctx.point(),
            ctx.sequence()
        ));
    });
    if let Some(m) = &policy_metrics {
        service = service.observe(Arc::new(m.clone()));
    }
    if let Some(log) = &log {
        service = service.observe(Arc::clone(log) as Arc<_>);
    }
    let secure = tls.is_some();
    let mut server = Server::builder();
    if let Some(tls) = tls {
        server = server.tls(tls.cert_pem, tls.key_pem)?;
        if let Some(ca) = tls.client_ca_pem {
            server = server.client_ca(ca)?;
        }
    }
    if let Some(m) = server_metrics {
        server = server.metrics(m);
    }
    // Bound before anything else serves, so a busy port or a refused
    // socket fails at once, and the banner names a socket that accepts.
    let bound = match listen {
        Listen::Tcp(addr) => Bound::Tcp(
            TcpListener::bind(addr)
                .await
                .map_err(|source| hookwire_server::Error::Bind { addr, source })?,
        ),
        Listen::Unix(path) => Bound::Unix(
            hookwire_edge::unix::UnixSocket::bind(&path).map_err(hookwire_server::Error::from)?,
        ),
    };
    let metrics = match metrics_addr {
        Some(addr) => {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| hookwire_server::Error::Bind { addr, source })?;
            let routes = vec![status_route(&policies, bundles.clone(), log.clone())];
            Some(serve_metrics(listener, registry, routes)?)
        }
        None => None,
    };
    let router = server.service(service);
    let served = match bound {
        Bound::Tcp(listener) => {
            let bound = listener
                .local_addr()
                .map_err(hookwire_server::Error::LocalAddr)?;
            let scheme = if secure { "https" } else { "http" };
            out(format_args!(
                "policy serving {} on {scheme}://{bound} (Ctrl-C to stop)",
                set.dir().display()
            ));
            router.serve_with_listener(listener, shutdown).await
        }
        Bound::Unix(socket) => {
            out(format_args!(
                "policy serving {} on unix:{} (Ctrl-C to stop)",
                set.dir().display(),
                socket.path().display()
            ));
            router.serve_unix_socket(socket, shutdown).await
        }
    };
    let stopped = match metrics {
        Some(m) => m.stop().await,
        None => Ok(()),
    };
    if let Some(log) = &log {
        close_log(log);
    }
    served?;
    Ok(stopped?)
}

/// Where the service listens, bound.
enum Bound {
    /// A bound TCP listener.
    Tcp(TcpListener),
    /// A bound owner-only Unix socket.
    Unix(hookwire_edge::unix::UnixSocket),
}

/// Serves `registry` and `routes` on `listener`, printing
/// `policy metrics: http://ADDR/metrics`.
fn serve_metrics(
    listener: TcpListener,
    registry: SharedRegistry,
    routes: Vec<JsonRoute>,
) -> Result<MetricsTask, Error> {
    let bound = listener
        .local_addr()
        .map_err(hookwire_server::Error::LocalAddr)?;
    out(format_args!("policy metrics: http://{bound}/metrics"));
    Ok(MetricsTask::spawn(listener, registry, routes))
}

/// Starts the decision log; drops are also counted in `drops` when given.
fn start_log(
    settings: DecisionLogSettings,
    drops: Option<prometheus_client::metrics::counter::Counter>,
) -> Result<Arc<DecisionLog>, Error> {
    let DecisionLogSettings {
        sink,
        inclusion,
        buffer,
    } = settings;
    let log = match sink {
        DecisionLogSink::Stdout => DecisionLog::start(JsonLines::stdout(), buffer, inclusion)?,
        DecisionLogSink::File(path) => {
            DecisionLog::start(JsonLines::file(&path)?, buffer, inclusion)?
        }
        DecisionLogSink::Writer(writer) => DecisionLog::start(writer, buffer, inclusion)?,
    };
    let log = match drops {
        Some(counter) => log.count_drops_in(counter),
        None => log,
    };
    Ok(Arc::new(log))
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
fn watch_dir(policies: &Arc<Policies>, metrics: Option<PolicyMetrics>) -> Result<Watcher, Error> {
    let watched = Arc::downgrade(policies);
    policies.watch(move |event| {
        match event {
            ReloadEvent::Reloaded {
                generation,
                packages,
            } => err(format_args!(
                "policies reloaded: generation {generation}, {packages} decision packages"
            )),
            ReloadEvent::Rejected { serving, error } => err(format_args!(
                "policy reload rejected (generation {serving} keeps serving): {error}"
            )),
        }
        if let (Some(m), Some(policies)) = (&metrics, watched.upgrade()) {
            m.record_reload(&policies.status());
        }
    })
}

/// Polls the bundle every `every`, printing each activation and refusal.
fn poll_bundle(
    bundles: &Arc<Bundles>,
    policies: &Arc<Policies>,
    every: Duration,
    metrics: Option<PolicyMetrics>,
) -> Poller {
    let watched = Arc::downgrade(policies);
    let observed = Arc::downgrade(bundles);
    bundles.poll(Arc::clone(policies), every, move |event| {
        match event {
            BundleEvent::Activated {
                revision,
                generation,
            } => err(format_args!(
                "bundle activated: revision {revision}, generation {generation}"
            )),
            BundleEvent::NotModified => {}
            BundleEvent::Failed { error } => err(format_args!(
                "bundle refused (the serving policies keep serving): {error}"
            )),
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
    err(format_args!(
        "decision log: {} written, {} dropped (buffer full), {} failed to write, {} unwritten at shutdown",
        summary.written, summary.dropped, summary.failed, summary.unwritten
    ));
}
