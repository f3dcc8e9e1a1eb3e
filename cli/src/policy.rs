//! `hookwire policy`: OPA Rego policies as an interceptor service, without
//! writing one (see `docs/policies.md`).
//!
//! - `serve DIR --addr ADDR` serves the policies of DIR and reloads them
//!   when a file changes (a set that fails to load is reported and the
//!   previous one keeps serving), with `--metrics-addr ADDR` the service's
//!   metrics at `/metrics`;
//! - `test DIR` runs the Rego unit tests (`test_*` rules), one line each,
//!   and fails when one does not pass;
//! - `eval DIR --point POINT --context FILE` prints the verdict for one
//!   context.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hookwire::{AgentContext, InterceptionPoint};
use hookwire_policy::{Policies, PolicyOptions, PolicyService, PolicySet, ReloadEvent, TestStatus};
use hookwire_server::Server;
use hookwire_server::metrics::{ServerMetrics, SharedRegistry};
use serde_json::Value;
use tokio::net::TcpListener;

use crate::error::CliError;
use crate::metrics_endpoint::{self, MetricsEndpoint};

/// Where `policy serve` listens unless told otherwise (what
/// `examples/declarations/policy.json` points at).
pub(crate) const POLICY_ADDR: &str = "127.0.0.1:50153";

/// The `policy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Serve the Rego policies of DIR as an interceptor service, reloading
    /// them when a file changes.
    #[command(
        after_help = "Example:\n  hookwire policy serve examples/policies --addr 127.0.0.1:50153 --metrics-addr 127.0.0.1:9463"
    )]
    Serve {
        /// The policy directory: `*.rego` modules and `data.json` /
        /// `data.yaml` documents.
        dir: PathBuf,
        /// The address to listen on (port 0: any free port, printed).
        #[arg(long, default_value = POLICY_ADDR, value_name = "ADDR")]
        addr: SocketAddr,
        /// Do not watch DIR for changes.
        #[arg(long)]
        no_watch: bool,
        /// Serve the service's Prometheus metrics (`hookwire_interceptor_*`)
        /// at `GET /metrics` on this address, e.g. `127.0.0.1:9463` (port 0:
        /// any free port, printed).
        /// Given without ADDR: 127.0.0.1:9463.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::POLICY_METRICS_ADDR)]
        metrics_addr: Option<SocketAddr>,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Run the Rego unit tests (`test_*` rules) of DIR; exits non-zero when
    /// one fails.
    #[command(after_help = "Example:\n  hookwire policy test examples/policies")]
    Test {
        /// The policy directory.
        dir: PathBuf,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Print the verdict the policies of DIR give for one context.
    #[command(
        after_help = "Example:\n  hookwire policy eval examples/policies --point pre_tool_call \\\n    --context examples/policies/contexts/rm_rf.json"
    )]
    Eval {
        /// The policy directory.
        dir: PathBuf,
        /// The interception point, e.g. `pre_tool_call`.
        #[arg(long, value_name = "POINT", value_parser = parse_point)]
        point: InterceptionPoint,
        /// The agent context (§4 JSON; `interception_point` may be left
        /// out).
        #[arg(long, value_name = "FILE")]
        context: PathBuf,
        /// Also print each package's raw decision document.
        #[arg(long)]
        explain: bool,
        #[command(flatten)]
        bounds: Bounds,
    },
}

/// How long one evaluation may run.
#[derive(Debug, clap::Args)]
pub(crate) struct Bounds {
    /// Bound of one evaluation; a policy running longer is cut off (an
    /// error status, so the host denies).
    #[arg(long, default_value_t = 100, value_name = "MS")]
    eval_timeout_ms: u64,
}

impl Bounds {
    fn options(&self) -> PolicyOptions {
        PolicyOptions {
            eval_limit: Duration::from_millis(self.eval_timeout_ms.max(1)),
            ..PolicyOptions::default()
        }
    }
}

fn parse_point(s: &str) -> Result<InterceptionPoint, String> {
    s.parse().map_err(|_| {
        let names: Vec<&str> = InterceptionPoint::ALL.iter().map(|p| p.as_str()).collect();
        format!("not a point; one of {}", names.join(", "))
    })
}

/// Runs one `policy` subcommand.
pub(crate) async fn run(command: PolicyCommand) -> Result<(), CliError> {
    match command {
        PolicyCommand::Serve {
            dir,
            addr,
            no_watch,
            metrics_addr,
            bounds,
        } => serve(dir, addr, no_watch, metrics_addr, bounds.options()).await,
        PolicyCommand::Test { dir, bounds } => test(&dir, bounds.options()),
        PolicyCommand::Eval {
            dir,
            point,
            context,
            explain,
            bounds,
        } => eval(&dir, point, &context, explain, bounds.options()),
    }
}

/// Serves the policies of `dir` until Ctrl-C, and the service's metrics
/// at `metrics_addr` when given.
async fn serve(
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
        outln!("{:<40} at {}", package.name, points.join(", "));
    }
    let _watcher = if no_watch {
        None
    } else {
        Some(policies.watch(|event| match event {
            ReloadEvent::Reloaded {
                generation,
                packages,
            } => errln!("policies reloaded: generation {generation}, {packages} decision packages"),
            ReloadEvent::Rejected { serving, error } => {
                errln!("policy reload rejected (generation {serving} keeps serving): {error}");
            }
        })?)
    };
    let service = PolicyService::new(policies).on_failure(|ctx, error| {
        errln!(
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
    outln!(
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

fn test(dir: &Path, options: PolicyOptions) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let outcomes = set.run_tests();
    let mut failed = 0;
    for outcome in &outcomes {
        let (word, detail) = match &outcome.status {
            TestStatus::Passed => ("PASS", String::new()),
            TestStatus::Failed => ("FAIL", String::new()),
            TestStatus::Error(e) => ("ERROR", format!("\n    {}", e.replace('\n', "\n    "))),
        };
        if outcome.status != TestStatus::Passed {
            failed += 1;
        }
        outln!(
            "{word:<5} {}.{} ({}, {:.1?}){detail}",
            outcome.test.package,
            outcome.test.name,
            outcome.test.file,
            outcome.duration
        );
    }
    outln!("\n{} passed, {failed} failed", outcomes.len() - failed);
    if outcomes.is_empty() {
        return Err(CliError::PolicyTests("no test_ rules found".into()));
    }
    if failed > 0 {
        return Err(CliError::PolicyTests(format!(
            "{failed} of {} tests failed",
            outcomes.len()
        )));
    }
    Ok(())
}

fn eval(
    dir: &Path,
    point: InterceptionPoint,
    context: &Path,
    explain: bool,
    options: PolicyOptions,
) -> Result<(), CliError> {
    let set = PolicySet::load(dir, options)?;
    let text = std::fs::read_to_string(context)
        .map_err(|e| CliError::PolicyTests(format!("cannot read {}: {e}", context.display())))?;
    let mut value: Value = serde_json::from_str(&text)
        .map_err(|e| CliError::PolicyTests(format!("{}: not JSON: {e}", context.display())))?;
    if let Value::Object(members) = &mut value {
        match members.get("interception_point").and_then(Value::as_str) {
            None => {
                members.insert("interception_point".into(), point.as_str().into());
            }
            Some(given) if given != point.as_str() => {
                return Err(CliError::PolicyTests(format!(
                    "{} is a {given} context, not {point}",
                    context.display()
                )));
            }
            Some(_) => {}
        }
    }
    let ctx = AgentContext::from_json(value).map_err(hookwire_policy::Error::from)?;
    if explain {
        for (package, document) in set.decision_documents(&ctx)? {
            outln!("{package}: {document}");
        }
    }
    let verdict = set.decide(&ctx)?;
    outln!(
        "{}",
        serde_json::to_string_pretty(&verdict.to_json()).unwrap_or_default()
    );
    Ok(())
}
