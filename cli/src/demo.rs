//! `hookwire demo` and `hookwire serve-demo`: the demo session of
//! `cargo run --example demo`, optionally governed by a declared chain, and
//! its two interceptor services on fixed loopback ports.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use hookwire_client::declaration::Declaration;
use hookwire_client::{Host, HostMetrics, InterceptorBinding, RecordLog, RecordSink};
use hookwire_demo::{Policy, Redactor, run_and_report, run_stream_and_report, secret_guard};
use hookwire_server::metrics::ServerMetrics;
use hookwire_server::metrics::SharedRegistry;
use hookwire_server::{Interceptor, Server};
use hookwire_telemetry::OtlpRecordSink;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::args::{DEMO_POLICY_ADDR, DEMO_REDACTOR_ADDR, RegistryArgs};
use crate::error::CliError;
use crate::metrics_endpoint::{self, MetricsEndpoint};

/// The demo host's records: kept for printing, and exported over OTLP when
/// `--otlp-endpoint` is given.
#[derive(Clone)]
struct DemoRecords {
    log: RecordLog,
    otlp: Option<OtlpRecordSink>,
}

impl RecordSink for DemoRecords {
    fn record(&self, record: &hookwire::InterceptionRecord) {
        self.log.record(record);
        if let Some(otlp) = &self.otlp {
            otlp.record(record);
        }
    }
}

/// What `hookwire demo` was asked to run.
pub(crate) struct DemoOptions<'a> {
    /// The declaration governing the session, else the built-in services.
    pub(crate) declaration: Option<&'a Path>,
    /// Start the demo services on their fixed ports first.
    pub(crate) serve: bool,
    /// Run the streaming variant.
    pub(crate) stream: bool,
    /// Serve the host's (and the started services') metrics here, until
    /// Ctrl-C after the session.
    pub(crate) metrics_addr: Option<SocketAddr>,
}

/// Runs the demo session and prints its records, and fails with
/// [`CliError::FailedClosed`] (exit status 4) when the host failed closed
/// on any of its emissions; with `stream`, the
/// streaming variant, its released segments as they come; with
/// `metrics_addr`, serves the metrics of the host and of the services it
/// started (one registry) until Ctrl-C once the session ended.
pub(crate) async fn run(
    options: DemoOptions<'_>,
    args: &RegistryArgs,
    otlp: Option<OtlpRecordSink>,
    signed: &crate::audit::RecordsArgs,
) -> Result<(), CliError> {
    let DemoOptions {
        declaration,
        serve,
        stream,
        metrics_addr,
    } = options;
    let records = RecordLog::new();
    let sink = DemoRecords {
        log: records.clone(),
        otlp,
    };
    let signed = signed.open()?;
    let registry: SharedRegistry = Arc::default();
    let (host_metrics, service_metrics) = match metrics_addr {
        Some(_) => {
            let mut r = registry.lock().unwrap_or_else(PoisonError::into_inner);
            (
                Some(HostMetrics::register(&mut r)),
                Some(ServerMetrics::register(&mut r)),
            )
        }
        None => (None, None),
    };
    let metrics_listener = metrics_endpoint::bind(metrics_addr).await?;
    let endpoint = MetricsEndpoint::serve(metrics_listener, registry, "metrics  serving on ")?;
    let mut stops = Vec::new();
    let host = match declaration {
        None => {
            let policy = spawn_counted(Policy, service_metrics.clone()).await?;
            let redactor = spawn_counted(Redactor, service_metrics.clone()).await?;
            outln!("policy   serving on {}", policy.endpoint());
            outln!("redactor serving on {}\n", redactor.endpoint());
            let mut builder = Host::builder("demo-agent", "hookwire")
                .agent_name("hookwire demo", env!("CARGO_PKG_VERSION"))
                .bind(InterceptorBinding::remote("policy", policy.endpoint()))
                .bind(InterceptorBinding::remote("redactor", redactor.endpoint()));
            if stream {
                builder = builder.bind(secret_guard());
            }
            if let Some(m) = host_metrics.clone() {
                builder = builder.metrics(m);
            }
            let host = builder
                .record_sink(sink.clone())
                .record_sink(signed.clone())
                .build()?;
            stops.push(Running::Local(policy));
            stops.push(Running::Local(redactor));
            host
        }
        Some(path) => {
            if serve {
                let policy = parse(DEMO_POLICY_ADDR);
                let redactor = parse(DEMO_REDACTOR_ADDR);
                stops.push(serve_at(policy, Policy, service_metrics.clone()).await?.0);
                stops.push(
                    serve_at(redactor, Redactor, service_metrics.clone())
                        .await?
                        .0,
                );
                outln!("policy   serving on http://{policy}");
                outln!("redactor serving on http://{redactor}");
            }
            let declaration = Declaration::from_path(path)?;
            let mut builder = Host::declared("demo-agent", "hookwire")
                .agent_name("hookwire demo", env!("CARGO_PKG_VERSION"))
                .record_sink(sink.clone())
                .record_sink(signed.clone());
            if let Some(m) = host_metrics.clone() {
                builder = builder.metrics(m);
            }
            let host = builder.load(&declaration, &args.registry()?)?;
            outln!(
                "governed by {} ({})\n",
                path.display(),
                host.declaration().unwrap_or_default()
            );
            host
        }
    };

    // The services stop whatever the session did; a failed session is
    // reported after they have.
    let session = if stream {
        run_stream_and_report(&host, &records, crate::output::line)
            .await
            .map(drop)
    } else {
        run_and_report(&host, &records, crate::output::line)
            .await
            .map(drop)
    };
    let signed_finished = signed.finish(crate::output::PrintTo::Stdout);
    if endpoint.is_serving() {
        outln!("(metrics kept serving; Ctrl-C to stop)");
        crate::shutdown::requested().await;
    }
    for running in stops {
        running.stop().await?;
    }
    endpoint.stop().await?;
    session?;
    signed_finished?;
    // A session the host failed closed on did not run as declared: an
    // interceptor was unreachable, slow or answered wrongly.
    match crate::exit::first_failed_closed(&records.session(hookwire_demo::SESSION_ID)) {
        Some(at) => Err(CliError::FailedClosed(at)),
        None => Ok(()),
    }
}

/// Starts `service` on a free loopback port, counted in `metrics` when
/// given.
async fn spawn_counted<S: Interceptor>(
    service: S,
    metrics: Option<ServerMetrics>,
) -> Result<hookwire_server::RunningServer, CliError> {
    let mut server = Server::builder();
    if let Some(m) = metrics {
        server = server.metrics(m);
    }
    Ok(server.service(service).spawn_local().await?)
}

/// Serves both demo services until Ctrl-C or SIGTERM, and their metrics at
/// `metrics_addr` (`GET /metrics`) when given.
pub(crate) async fn serve(
    policy: SocketAddr,
    redactor: SocketAddr,
    metrics_addr: Option<SocketAddr>,
) -> Result<(), CliError> {
    let registry: SharedRegistry = Arc::default();
    let metrics = metrics_addr.map(|_| {
        ServerMetrics::register(&mut registry.lock().unwrap_or_else(PoisonError::into_inner))
    });
    let (a, policy) = serve_at(policy, Policy, metrics.clone()).await?;
    let (b, redactor) = serve_at(redactor, Redactor, metrics).await?;
    outln!("policy   serving on http://{policy}");
    outln!("redactor serving on http://{redactor}");
    let listener = metrics_endpoint::bind(metrics_addr).await?;
    let metrics = MetricsEndpoint::serve(listener, registry, "metrics  serving on ")?;
    outln!("(Ctrl-C to stop)");
    crate::shutdown::requested().await;
    a.stop().await?;
    b.stop().await?;
    metrics.stop().await
}

fn parse(addr: &str) -> SocketAddr {
    addr.parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

/// A service started by this command.
enum Running {
    Local(hookwire_server::RunningServer),
    Fixed(
        oneshot::Sender<()>,
        tokio::task::JoinHandle<Result<(), hookwire_server::Error>>,
    ),
}

impl Running {
    async fn stop(self) -> Result<(), CliError> {
        match self {
            Self::Local(r) => r.shutdown().await?,
            Self::Fixed(stop, task) => {
                let _ = stop.send(());
                if let Ok(result) = task.await {
                    result?;
                }
            }
        }
        Ok(())
    }
}

/// Binds `addr` now (so a busy port fails here) and serves `service` in
/// the background, counted in `metrics` when given; returns the bound
/// address too (`addr` may ask for port 0).
async fn serve_at<S: Interceptor>(
    addr: SocketAddr,
    service: S,
    metrics: Option<ServerMetrics>,
) -> Result<(Running, SocketAddr), CliError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| hookwire_server::Error::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(hookwire_server::Error::LocalAddr)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let mut server = Server::builder();
    if let Some(m) = metrics {
        server = server.metrics(m);
    }
    let task = tokio::spawn(
        server
            .service(service)
            .serve_with_listener(listener, async move {
                let _ = stopped.await;
            }),
    );
    Ok((Running::Fixed(stop, task), bound))
}
