//! The hookwire demo: an agent session governed by two interceptor services.
//!
//! It starts, in this process on 127.0.0.1:0, two gRPC interceptor services
//! written with `hookwire-server`:
//!
//! - `policy`: denies `bash` tool calls that run destructive commands
//!   (`rm -rf`, `mkfs`, `dd of=/dev/...`);
//! - `redactor`: rewrites e-mail addresses and phone numbers in the input,
//!   with a `transform` verdict on `$target.content`.
//!
//! Then it drives a scripted agent (a mock model that asks for tool calls,
//! mock tools) through all eight interception points with `hookwire-client`
//! and prints one line per emission: sequence, point, decision, reason, and
//! which interceptor decided.
//!
//! The agent and both services are `hookwire_demo`, the same
//! code the `hookwire demo` command runs.
//!
//! Run it with `cargo run --release --example demo`. With `-- --stream`,
//! the model streams its answer and the host mediates it segment by
//! segment (§12.1's exception): each released segment is printed as it is
//! released, and an extra in-process check bound at `post_model_call`
//! denies the chunk that leaks an access key, withholding the rest.

use std::process::ExitCode;

use clap::Parser;
use hookwire_client::{Host, InterceptorBinding, RecordLog};
use hookwire_demo::{Policy, Redactor, run_and_report, run_stream_and_report, secret_guard};
use hookwire_server::spawn_local;

/// An agent session governed by two interceptor services this process
/// starts on loopback: one line per emission, then the answer.
#[derive(Debug, Parser)]
#[command(
    name = "demo",
    after_help = "Example:\n  cargo run --release --example demo -- --stream"
)]
struct Args {
    /// Stream the model's answer under incremental mediation, printing
    /// each segment as its verdict releases it, with an in-process check
    /// that denies the chunk leaking an access key.
    #[arg(long)]
    stream: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args.stream).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Starts both services, runs the session and stops them, whatever the
/// session did.
async fn run(stream: bool) -> Result<(), Box<dyn std::error::Error>> {
    let policy = spawn_local(Policy).await?;
    let redactor = spawn_local(Redactor).await?;
    println!("policy   serving on {}", policy.endpoint());
    println!("redactor serving on {}\n", redactor.endpoint());

    let records = RecordLog::new();
    let mut builder = Host::builder("demo-agent", "hookwire")
        .agent_name("hookwire demo", env!("CARGO_PKG_VERSION"))
        .bind(InterceptorBinding::remote("policy", policy.endpoint()))
        .bind(InterceptorBinding::remote("redactor", redactor.endpoint()));
    if stream {
        builder = builder.bind(secret_guard());
    }
    let host = builder.record_sink(records.clone()).build()?;

    let print = |line: std::fmt::Arguments<'_>| println!("{line}");
    let session = if stream {
        run_stream_and_report(&host, &records, print)
            .await
            .map(drop)
    } else {
        run_and_report(&host, &records, print).await.map(drop)
    };

    policy.shutdown().await?;
    redactor.shutdown().await?;
    session?;
    Ok(())
}
