//! `hookwire policy`: OPA Rego and Cedar policies as an interceptor
//! service, without writing one (see `docs/policies.md`).
//!
//! - `serve DIR --addr ADDR` serves the policies of DIR and reloads them
//!   when a file changes (a set that fails to load is reported and the
//!   previous one keeps serving), with `--metrics-addr ADDR` the service's
//!   metrics at `/metrics`;
//! - `test DIR` runs the Rego unit tests (`test_*` rules) and the Cedar
//!   test cases (`*.cedartest.json`), one line each, and fails when one
//!   does not pass;
//! - `eval DIR --point POINT --context FILE` prints the verdict for one
//!   context;
//! - `schema` prints the Cedar schema the service publishes.

mod eval;
mod serve;
mod test;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_policy::PolicyOptions;

use crate::error::CliError;

use self::eval::eval;
use self::serve::serve;
use self::test::test;

/// Where `policy serve` listens unless told otherwise (what
/// `examples/declarations/policy.json` points at).
pub(crate) const POLICY_ADDR: &str = "127.0.0.1:50153";

/// The `policy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum PolicyCommand {
    /// Serve the Rego and Cedar policies of DIR as an interceptor service,
    /// reloading them when a file changes.
    #[command(
        after_help = "Example:\n  hookwire policy serve examples/policies --addr 127.0.0.1:50153\n  hookwire policy serve examples/policies-cedar --addr 127.0.0.1:0"
    )]
    Serve {
        /// The policy directory: `*.rego` modules, `data.json` /
        /// `data.yaml` documents, `*.cedar` policies and at most one
        /// `*.cedarschema` (else the published schema validates them).
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
        #[arg(long, value_name = "ADDR")]
        metrics_addr: Option<SocketAddr>,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Run the Rego unit tests (`test_*` rules) and the Cedar test cases
    /// (`*.cedartest.json`) of DIR; exits non-zero when one fails.
    #[command(after_help = "Example:\n  hookwire policy test examples/policies-cedar")]
    Test {
        /// The policy directory.
        dir: PathBuf,
        #[command(flatten)]
        bounds: Bounds,
    },
    /// Print the verdict the policies of DIR give for one context.
    #[command(
        after_help = "Example:\n  hookwire policy eval examples/policies-cedar --point pre_tool_call \\\n      --context examples/policies-cedar/contexts/wire_transfer.json --explain"
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
        PolicyCommand::Schema => {
            print!("{}", hookwire_policy::CEDAR_SCHEMA);
            Ok(())
        }
    }
}
