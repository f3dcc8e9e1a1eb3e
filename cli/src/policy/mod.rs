//! `hookwire policy`: OPA Rego and Cedar policies as an interceptor
//! service, without writing one (see `docs/policies.md`).
//!
//! - `serve DIR --addr ADDR` serves the policies of DIR and reloads them
//!   when a file changes (a set that fails to load is reported and the
//!   previous one keeps serving), with `--metrics-addr ADDR` the service's
//!   metrics at `/metrics`;
//! - `test DIR` runs the Rego unit tests (`test_*` rules) and the Cedar
//!   test cases (`*.cedartest.json`), one line each, and fails when one
//!   does not pass; `--coverage` adds the lines of each
//!   module the tests evaluated;
//! - `bench DIR` times decisions in-process, per context and package;
//! - `eval DIR --point POINT --context FILE` prints the verdict for one
//!   context;
//! - `schema` prints the Cedar schema the service publishes.

mod bench;
mod eval;
mod ops;
mod serve;
mod test;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_policy::PolicyOptions;

use crate::error::CliError;

use self::bench::bench;
use self::eval::eval;
use self::serve::serve;
use self::test::test;

/// Where `policy serve` listens unless told otherwise (what
/// `examples/declarations/policy.json` points at).
pub(crate) const POLICY_ADDR: &str = "127.0.0.1:50153";

/// The `policy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Serve the Rego and Cedar policies of DIR (or of an OPA bundle) as an
    /// interceptor service, reloading them when a file changes.
    #[command(after_help = "Examples:\n  \
        hookwire policy serve examples/policies --metrics-addr 127.0.0.1:9463\n  \
        hookwire policy serve examples/policies-cedar --addr 127.0.0.1:0\n  \
        hookwire policy serve --bundle https://bundles.example/policy.tar.gz \\\n    \
        --bundle-verification-key bundle.pub.pem --bundle-signing-alg EdDSA \\\n    \
        --decision-log file:decisions.jsonl --decision-log-include /tool_call/name \\\n    \
        --tls-cert cert.pem --tls-key key.pem --client-ca hosts-ca.pem")]
    Serve {
        /// The policy directory: `*.rego` modules, `data.json` /
        /// `data.yaml` documents, `*.cedar` policies and at most one
        /// `*.cedarschema` (else the published schema validates them); or
        /// `--bundle`.
        #[arg(required_unless_present = "bundle")]
        dir: Option<PathBuf>,
        /// The address to listen on (port 0: any free port, printed), or
        /// `unix:/path` for an owner-only Unix socket (0600, in a
        /// directory only this user can write to) that hosts on this
        /// machine reach as a `unix:/path` endpoint.
        #[arg(long, default_value = POLICY_ADDR, value_name = "ADDR")]
        addr: crate::args::ListenAddr,
        /// Do not watch DIR for changes.
        #[arg(long)]
        no_watch: bool,
        /// Serve the service's Prometheus metrics (`hookwire_interceptor_*`,
        /// `hookwire_policy_*`) at `GET /metrics` and its status (JSON) at
        /// `GET /status` on this address, e.g. `127.0.0.1:9463` (port 0:
        /// any free port, printed). Given without ADDR: 127.0.0.1:9463.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::POLICY_METRICS_ADDR)]
        metrics_addr: Option<SocketAddr>,
        #[command(flatten)]
        bounds: Bounds,
        #[command(flatten)]
        ops: Box<ops::OpsArgs>,
    },
    /// Run the Rego unit tests (`test_*` rules) and the Cedar test cases
    /// (`*.cedartest.json`) of DIR; exits non-zero when one fails.
    #[command(
        after_help = "Examples:\n  hookwire policy test examples/policies --coverage\n  hookwire policy test examples/policies-cedar"
    )]
    Test {
        /// The policy directory.
        dir: PathBuf,
        /// Also print which lines of each module the tests evaluated: a
        /// percentage per file and the lines no test reached.
        #[arg(long)]
        coverage: bool,
        /// Write the coverage (covered and uncovered lines per file) as
        /// JSON to FILE.
        #[arg(long, value_name = "FILE")]
        coverage_json: Option<PathBuf>,
        #[command(flatten)]
        bounds: TestBounds,
    },
    /// Time the decisions of DIR in-process: decisions per second and
    /// p50/p99 latency for each context, and for each package deciding at
    /// its point.
    #[command(
        after_help = "Examples:\n  hookwire policy bench examples/policies\n  hookwire policy bench examples/policies --context examples/policies/contexts/rm_rf.json --duration 500ms"
    )]
    Bench {
        /// The policy directory; without --context, the contexts timed are
        /// the `*.json` files of DIR/contexts/.
        dir: PathBuf,
        /// Time only contexts at this point (fills in a context file's
        /// missing `interception_point`).
        #[arg(long, value_name = "POINT", value_parser = parse_point)]
        point: Option<InterceptionPoint>,
        /// The one agent context to time (§4 JSON).
        #[arg(long, value_name = "FILE")]
        context: Option<PathBuf>,
        /// How long the whole run takes, shared equally by its rows, e.g.
        /// `500ms` or `5s`.
        #[arg(long, default_value = "3s", value_parser = bench::parse_duration)]
        duration: Duration,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Print the verdict the policies of DIR give for one context.
    #[command(
        after_help = "Examples:\n  hookwire policy eval examples/policies --point pre_tool_call \\\n    --context examples/policies/contexts/rm_rf.json\n  hookwire policy eval examples/policies-cedar --point pre_tool_call \\\n    --context examples/policies-cedar/contexts/wire_transfer.json --explain"
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
    /// Print the Cedar schema the service publishes: the request it builds
    /// at each point (principal, action, resource, context). Cedar policies
    /// are validated against it unless DIR has its own `*.cedarschema`;
    /// start that from this one.
    #[command(after_help = "Example:\n  hookwire policy schema > my-policies/hookwire.cedarschema")]
    Schema,
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
        options(self.eval_timeout_ms)
    }
}

/// How long one test rule may run under `policy test`: a test checks what
/// a policy decides, so its bound only stops a runaway rule; a busy
/// machine (a CI runner, a debug build) must not fail a test on time.
/// The serving bound is `serve`'s, and `bench` measures the latency.
#[derive(Debug, clap::Args)]
pub(crate) struct TestBounds {
    /// Bound of one test rule's evaluation; a rule running longer is cut
    /// off (the test errs).
    #[arg(long, default_value_t = 10_000, value_name = "MS")]
    eval_timeout_ms: u64,
}

impl TestBounds {
    fn options(&self) -> PolicyOptions {
        options(self.eval_timeout_ms)
    }
}

/// The policy options with an evaluation bound of `ms` (at least 1 ms).
fn options(ms: u64) -> PolicyOptions {
    PolicyOptions {
        eval_limit: Duration::from_millis(ms.max(1)),
        ..PolicyOptions::default()
    }
}

fn parse_point(s: &str) -> Result<InterceptionPoint, String> {
    s.parse().map_err(|_| {
        let names: Vec<&str> = InterceptionPoint::ALL.iter().map(|p| p.as_str()).collect();
        format!("not a point; one of {}", names.join(", "))
    })
}

impl PolicyCommand {
    /// The OTLP collector `serve --otlp-endpoint` names (for the decision
    /// log's `otlp` sink).
    pub(crate) fn otlp_endpoint(&self) -> Option<&str> {
        match self {
            Self::Serve { ops, .. } => ops.telemetry.otlp_endpoint.as_deref(),
            Self::Test { .. } | Self::Eval { .. } | Self::Bench { .. } | Self::Schema => None,
        }
    }
}

/// Runs one `policy` subcommand (`telemetry`: the OTLP export installed
/// for `serve`, if any).
pub(crate) async fn run(
    command: PolicyCommand,
    telemetry: Option<&hookwire_telemetry::Telemetry>,
) -> Result<(), CliError> {
    match command {
        PolicyCommand::Serve {
            dir,
            addr,
            no_watch,
            metrics_addr,
            bounds,
            ops,
        } => {
            let request = serve::ServeRequest {
                dir,
                addr,
                no_watch,
                metrics_addr,
                options: bounds.options(),
                ops: *ops,
            };
            serve(request, telemetry).await
        }
        PolicyCommand::Test {
            dir,
            coverage,
            coverage_json,
            bounds,
        } => test(&dir, coverage, coverage_json.as_deref(), bounds.options()),
        PolicyCommand::Bench {
            dir,
            point,
            context,
            duration,
            bounds,
        } => bench(&dir, point, context.as_deref(), duration, bounds.options()),
        PolicyCommand::Eval {
            dir,
            point,
            context,
            explain,
            bounds,
        } => eval(&dir, point, &context, explain, bounds.options()),
        PolicyCommand::Schema => {
            out!("{}", hookwire_policy::CEDAR_SCHEMA);
            Ok(())
        }
    }
}
