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
//! The agent and both services are `hookwire_cli::demo_agent`, the same
//! code the `hookwire demo` command runs.
//!
//! Run it with `cargo run --release --example demo`.

use std::error::Error;

use hookwire_cli::demo_agent::{Policy, Redactor, run_and_report};
use hookwire_client::{Host, InterceptorBinding, RecordLog};
use hookwire_server::spawn_local;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let policy = spawn_local(Policy).await?;
    let redactor = spawn_local(Redactor).await?;
    println!("policy   serving on {}", policy.endpoint());
    println!("redactor serving on {}\n", redactor.endpoint());

    let records = RecordLog::new();
    let host = Host::builder("demo-agent", "hookwire")
        .agent_name("hookwire demo", env!("CARGO_PKG_VERSION"))
        .bind(InterceptorBinding::remote("policy", policy.endpoint()))
        .bind(InterceptorBinding::remote("redactor", redactor.endpoint()))
        .record_sink(records.clone())
        .build()?;

    let session = run_and_report(&host, &records).await;

    policy.shutdown().await?;
    redactor.shutdown().await?;
    session?;
    Ok(())
}
