//! `hookwire-soak`: a long run of a host against a fleet of interceptor
//! replicas that are killed and restarted on a schedule, counting that
//! nothing is lost: every emission has its record, no session skips a
//! sequence number, and every failure that reaches the agent is a
//! recorded `host_error:*` deny.
//!
//! The same kill schedule runs twice — against the fleet (`--replicas`,
//! default 3) and against a single replica — so the report shows what the
//! fleet buys in availability (the share of emissions allowed). Replicas
//! are child processes (this binary, `replica` mode) on loopback, killed
//! with SIGKILL: calls in flight on a killed replica fail, as they would
//! in production, and are counted.
//!
//! ```text
//! cargo run --release -p hookwire-soak -- run            # writes SOAK.md
//! cargo run --release -p hookwire-soak -- run --smoke    # seconds, no file
//! ```
//!
//! | module | role |
//! | --- | --- |
//! | `fleet` | the replica processes and the kill schedule |
//! | `workload` | the host, the sessions and what is counted |
//! | `report` | SOAK.md and its closing line |
//! | `error` | [`SoakError`](error::SoakError) |

mod error;
mod fleet;
mod report;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::error::SoakError;

/// The soak's command line.
#[derive(Parser, Debug)]
#[command(
    name = "hookwire-soak",
    version,
    about = "Soak a host against an interceptor fleet whose replicas are killed and restarted on a schedule; writes SOAK.md"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs the soak (fleet, then one replica, same kill schedule) and
    /// writes the report.
    Run(RunArgs),
    /// Serves an allow-all interceptor on ADDR until killed (what `run`
    /// starts as each replica process).
    Replica {
        /// The address to listen on, e.g. 127.0.0.1:50051.
        #[arg(long)]
        listen: String,
    },
}

/// How large and how hostile a soak is.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Emissions to make against the fleet (tool calls, besides each
    /// session's start and input).
    #[arg(long, default_value_t = 1_000_000)]
    emissions: u64,
    /// Concurrent sessions, each emitting one call at a time.
    #[arg(long, default_value_t = 1000)]
    sessions: usize,
    /// Replicas in the fleet.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Kill one replica (SIGKILL, round robin) this often, in ms.
    #[arg(long, default_value_t = 3000)]
    kill_every_ms: u64,
    /// How long a killed replica stays down before it is restarted, in ms.
    #[arg(long, default_value_t = 1000)]
    down_ms: u64,
    /// Each session's pause between emissions (an agent thinks between
    /// tool calls), in ms, jittered ±50%.
    #[arg(long, default_value_t = 50)]
    think_ms: u64,
    /// The binding's per-call timeout, in ms.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Emissions for the single-replica comparison (default: the same as
    /// `--emissions`).
    #[arg(long)]
    single_emissions: Option<u64>,
    /// Where to write the report.
    #[arg(long, default_value = "SOAK.md")]
    out: PathBuf,
    /// A short run (20 000 emissions, 200 sessions, kills every 400 ms)
    /// that writes no file unless `--out` is given explicitly: for the
    /// default test suite.
    #[arg(long)]
    smoke: bool,
}

impl RunArgs {
    /// The settings of one pass of the soak.
    fn plan(&self, replicas: usize, emissions: u64) -> workload::Plan {
        workload::Plan {
            emissions,
            sessions: self.sessions,
            replicas,
            kill_every: Duration::from_millis(self.kill_every_ms),
            down_for: Duration::from_millis(self.down_ms),
            think: Duration::from_millis(self.think_ms),
            timeout: Duration::from_millis(self.timeout_ms),
        }
    }

    /// The smoke settings.
    fn smoked(mut self) -> Self {
        self.emissions = 20_000;
        self.sessions = 200;
        self.kill_every_ms = 400;
        self.down_ms = 300;
        self.think_ms = 20;
        self.single_emissions = Some(10_000);
        self
    }
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Replica { listen } => fleet::serve_replica(&listen),
        Command::Run(args) => run(args),
    };
    if let Err(e) = outcome {
        eprintln!("hookwire-soak: {e}");
        std::process::exit(1);
    }
}

/// Both passes, the report, and the exit status: non-zero when a record
/// was lost, a sequence skipped or a failure went unrecorded.
fn run(args: RunArgs) -> Result<(), SoakError> {
    let write_file = !args.smoke || args.out.as_path() != std::path::Path::new("SOAK.md");
    let args = if args.smoke { args.smoked() } else { args };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(SoakError::Runtime)?;
    rt.block_on(async {
        let fleet = workload::soak(args.plan(args.replicas, args.emissions)).await?;
        println!("{}", report::line(&fleet));
        let single_n = args.single_emissions.unwrap_or(args.emissions);
        let single = workload::soak(args.plan(1, single_n)).await?;
        println!("single replica: {}", report::line(&single));
        let text = report::markdown(&fleet, &single, args.smoke);
        if write_file {
            std::fs::write(&args.out, &text).map_err(|source| SoakError::Write {
                path: args.out.clone(),
                source,
            })?;
            println!("wrote {}", args.out.display());
        }
        if fleet.lost_records() != 0 || fleet.sequence_gaps != 0 || fleet.unrecorded_failures != 0 {
            return Err(SoakError::Lost(report::line(&fleet)));
        }
        Ok(())
    })
}
