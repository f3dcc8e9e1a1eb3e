//! The official AGENT-HOOKS-0.1 conformance vectors, run through hookwire's
//! wire.
//!
//! The CTK runner of `agent-hooks-sdk` drives this harness vector by vector.
//! For each vector the harness serves every scripted interceptor as a gRPC
//! interceptor service (hookwire-server, on 127.0.0.1:0), binds them as
//! remote interceptors of a hookwire host configured with the vector's mode,
//! composition, identity provider, approval resolver and redactor, and runs
//! the vector's scenario (mock model, mock tools) through the reference
//! agent loop of hookwire-client. The runner then asserts what the scripted
//! interceptors saw, what the tools received, the run outcome and every
//! interception record.
//!
//! Streamed responses (`respond.stream`, the `streaming/incremental` part)
//! go through the agent's incremental mediation (§12.1's exception): each
//! chunk closes a segment evaluated by its own `post_model_call` over the
//! assembled prefix, release is watermark-gated (exposure bound: none
//! ahead of a covering verdict), a deny withholds the rest, and a truncated
//! stream's residue is self-denied `host_error:streaming_unsupported`. The
//! runner of this SDK version does not yet assert `released_output` and
//! `persisted_must_not_contain`; this harness asserts both itself, on what
//! the agent released and on its transcript (what the session persists).
//!
//! Model responses reach the host as the vector's own JSON text (the
//! `respond` member, sliced from the file without parsing its numbers), so
//! an integer literal beyond the 64-bit range (`bigint_json`, AH-CTK-091)
//! meets hookwire's exact decoder instead of a value the runner already
//! rounded when it parsed the vector.
//!
//! The vector's scripted approval resolver is not called in process: it
//! sits behind a hookwire approval service, and the host reaches it with a
//! `StreamResolver` over the service's `Resolve` stream, so every approval
//! vector also exercises the approval wire (request and context encoding,
//! the echoed identity, failures).
//!
//! Declaration vectors (`host_declaration`, §7.7.9) build the host through
//! hookwire's declaration loader instead: the vector's document, resolved
//! against a hookwire registry that mirrors the CTK's (`ctk.scripted` binds
//! script `i` as the gRPC service serving it, plus `ctk-fault`,
//! `ctk-scripted` and `ctk-redact`). A refusal is reported as a load
//! outcome with its `declaration_error:*` class.
//!
//! Every record of every vector also goes through the testkit's schema
//! sink, and every context a scripted service receives through its context
//! check: both validate against the kit's official JSON schemas, and a
//! violation ends the run.
//!
//! The vectors are downloaded at test time (`scripts/fetch-ctk-vectors.sh`,
//! into `.cache/ctk/`), never committed. Every vector runs three times: with the
//! services called over the eight unary RPCs (what a service written from
//! `proto/` alone serves) and over the `Multiplex` stream (what the SDK
//! declares), then a third time with the scripted interceptors served by the
//! hookwire Python package (`python.rs`: one Python process serving them
//! all, over the Multiplex stream). Each run prints one line per vector, a
//! per-part table and its time; then come the schema line (`schema: N
//! records, M contexts validated, 0 violations`) and a `conformance: N
//! passed, M failed, K skipped (unary|multiplex|python)` line per run; the
//! binary exits non-zero when an applicable vector fails on any. It
//! also fails when the committed `CONFORMANCE.md` differs from the report
//! this run would write; `HOOKWIRE_WRITE_CONFORMANCE=1` writes it instead.

mod declared;
mod harness;
mod python;
mod report;
mod scenario;
mod scripted;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex};

use agent_hooks::ctk::{
    DeclarationError, DeclarationErrorClass, Harness, HostRegistry, IdentityPair, RunRecord,
    VectorResult, VectorSetup,
};
use agent_hooks::{EnforcementMode, IdentityProvider as CtkIdentityProvider};
use futures::FutureExt;
use futures::StreamExt;
use hookwire::approval::{ApprovalOutcome, ApprovalRequest, ApprovalResolution};
use hookwire::{
    AgentContext, Composition, Decision, Manifest, Mode, OnApproval, Profile, Synthesis, Transform,
    Verdict, Warning,
};
use hookwire_agent::{Agent, Model, ToolError, Toolbox};
use hookwire_approvals::{
    Access, AccessConfig, ApprovalServer, ApproverIdentity, PrincipalConfig, QueueEvent,
};
use hookwire_client::declaration::{Declaration, HostSurface, KnobSupport, Posture, Registry};
use hookwire_client::{
    ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, ChunkStream, Host, IdentityProvider,
    InputRole, InterceptorBinding, ModelResponse, RecordLog, ShutdownReason, StreamEvent,
    StreamResolver, ToolCall,
};
use hookwire_testkit::SchemaSink;

/// The conformance host's token for the approval service it resolves through.
const CTK_HOST_TOKEN: &str = "hwa_ctk_host_0123456789abcdef0123456789abcdef";
use hookwire_server::{GrpcAdapter, Interceptor, Server, async_trait, manifest};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use declared::*;
use harness::*;
use report::*;
use scenario::*;
use scripted::*;

/// The capabilities this host declares (§3.2, §13.1).
const CAPABILITIES: [&str; 6] = [
    "bigint_json",
    "host_declaration",
    "incremental_output",
    "int64_json",
    "model_calls",
    "tool_calls",
];
/// The §12.1a exposure bound of the incremental mediation: what can reach
/// the caller ahead of the verdict covering it.
const EXPOSURE_BOUND: &str =
    "none: release is watermark-gated, each segment egresses only on a verdict covering it";
/// The §6.2 posture at the tool seam.
const POSTURE: &str = "continue";
/// The CTK runner crate the vectors are asserted with.
const RUNNER: &str = "agent-hooks-sdk 0.1.0-beta.3 (Rust CTK runner)";
/// The wheel the vectors come from (checked by the fetch script).
const VECTOR_SOURCE: &str = "agent-hooks-sdk==0.1.0b3 wheel, sha256 a471666a8f3d995a2b4c831c3790704b14bf5b7d595f82f5009c36ef25d05090";
/// What the expected panics of the `ctk-fault` identity provider say.
const CTK_FAULT_PANIC: &str = "ctk scripted provider fault";

fn main() -> ExitCode {
    if skipped_by_cli_filter() {
        return ExitCode::SUCCESS;
    }
    silence_expected_panics();
    let vectors = match load_vectors() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");

    println!("hookwire conformance: AGENT-HOOKS-0.1 CTK through gRPC interceptor services");
    println!(
        "surface: capabilities {CAPABILITIES:?}, tool_seam_host_error={POSTURE}, identity provider jcs-sha256, incremental output (exposure bound: none ahead of a covering verdict)"
    );
    let texts = match vector_texts() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut summaries = Vec::new();
    let mut failed = false;
    let mut results = Vec::new();
    for transport in [Transport::Unary, Transport::Multiplex, Transport::Python] {
        let started = std::time::Instant::now();
        println!("transport: {}", transport.label());
        let run = run_all(&runtime, &vectors, &texts, transport);
        let report = Report::new(&run);
        print!("{}", report.table());
        failed |= report.failed > 0 || report.passed == 0;
        summaries.push(format!("{} ({})", report.summary(), transport.label()));
        println!(
            "transport {}: {:.1} s",
            transport.label(),
            started.elapsed().as_secs_f64()
        );
        if transport == Transport::Multiplex {
            results = run;
        }
    }
    python::shutdown();

    // The markdown names the three runs; its vector table is the Rust
    // SDK's stream's (the run passes only when all three pass every
    // applicable vector).
    let report = Report::new(&results);
    let summary = summaries.join("\n");
    let path = hookwire_testkit::workspace_root().join("CONFORMANCE.md");
    let markdown = report.markdown(&results, &summaries);
    let mut stale = false;
    if std::env::var_os("HOOKWIRE_WRITE_CONFORMANCE").is_some_and(|v| v == "1") {
        if let Err(e) = std::fs::write(&path, &markdown) {
            eprintln!("conformance: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    } else if std::fs::read_to_string(&path).ok().as_deref() != Some(markdown.as_str()) {
        stale = true;
        println!(
            "conformance: {} differs from what this run reports; regenerate it with \
             `HOOKWIRE_WRITE_CONFORMANCE=1 cargo test -p hookwire-tests --test conformance` \
             and commit it",
            path.display()
        );
    }
    // Every record of the run went through a schema sink and every context
    // a scripted service received was checked (a violation ends the run).
    let schema = hookwire_testkit::schema::tally();
    println!("{schema}");
    println!("{summary}");
    if failed || stale || schema.records == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// How the host reaches the scripted services.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The eight unary RPCs: the services leave the stream out of their
    /// manifest.
    Unary,
    /// The `Multiplex` stream the SDK declares.
    #[default]
    Multiplex,
    /// The scripted interceptors served by the hookwire Python package
    /// (over the Multiplex stream its manifest declares).
    Python,
}

impl Transport {
    /// The name the summary line gives the run.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Transport::Unary => "unary",
            Transport::Multiplex => "multiplex",
            Transport::Python => "python",
        }
    }
}

/// Runs every vector on a fresh harness whose services are reached over
/// `transport`, printing each result.
fn run_all(
    runtime: &tokio::runtime::Runtime,
    vectors: &[Value],
    texts: &HashMap<String, Vec<String>>,
    transport: Transport,
) -> Vec<(Value, VectorResult)> {
    let mut results = Vec::with_capacity(vectors.len());
    for vector in vectors {
        let id = vector["id"].as_str().unwrap_or_default();
        let mut harness = HookwireHarness::new(
            vector.clone(),
            texts.get(id).cloned().unwrap_or_default(),
            transport,
        );
        let mut result = runtime.block_on(agent_hooks::ctk::run_vector(&mut harness, vector));
        if result.status == "pass" {
            let failures = harness.incremental_failures(vector);
            if !failures.is_empty() {
                result.status = "fail";
                result.failures = failures;
            }
        }
        print_result(vector, &result);
        results.push((vector.clone(), result));
    }

    results
}
