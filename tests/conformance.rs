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
//! into `.cache/ctk/`), never committed. Every vector runs twice: with the
//! services called over the eight unary RPCs (what a service written from
//! `proto/` alone serves) and over the `Multiplex` stream (what the SDK
//! declares). Each run prints one line per vector and a per-part table;
//! then come the schema line (`schema: N records, M contexts validated, 0
//! violations`) and a `conformance: N passed, M failed, K skipped
//! (unary|multiplex)` line per run; the binary exits non-zero when an
//! applicable vector fails on either. It
//! also fails when the committed `CONFORMANCE.md` differs from the report
//! this run would write; `HOOKWIRE_WRITE_CONFORMANCE=1` writes it instead.

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
use hookwire_approvals::{
    Access, AccessConfig, ApprovalServer, ApproverIdentity, PrincipalConfig, QueueEvent,
};
use hookwire_client::declaration::{Declaration, HostSurface, KnobSupport, Posture, Registry};
use hookwire_client::{
    Agent, ApprovalAnswer, ApprovalResolver, BoxError, BoxFuture, ChunkStream, Host,
    IdentityProvider, InputRole, InterceptorBinding, Model, ModelResponse, RecordLog,
    ShutdownReason, StreamEvent, StreamResolver, ToolCall, ToolError, Toolbox,
};
use hookwire_testkit::SchemaSink;

/// The conformance host's token for the approval service it resolves through.
const CTK_HOST_TOKEN: &str = "hwa_ctk_host_0123456789abcdef0123456789abcdef";
use hookwire_server::{GrpcAdapter, Interceptor, Server, async_trait, manifest};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::oneshot;

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
    for transport in [Transport::Unary, Transport::Multiplex] {
        println!("transport: {}", transport.label());
        results = run_all(&runtime, &vectors, &texts, transport);
        let report = Report::new(&results);
        print!("{}", report.table());
        failed |= report.failed > 0 || report.passed == 0;
        summaries.push(format!("{} ({})", report.summary(), transport.label()));
    }

    // The markdown names both runs; its vector table is the stream's (the
    // run passes only when both pass every applicable vector).
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
enum Transport {
    /// The eight unary RPCs: the services leave the stream out of their
    /// manifest.
    Unary,
    /// The `Multiplex` stream the SDK declares.
    #[default]
    Multiplex,
}

impl Transport {
    fn label(self) -> &'static str {
        match self {
            Transport::Unary => "unary",
            Transport::Multiplex => "multiplex",
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
        let mut harness = HookwireHarness {
            vector: vector.clone(),
            responses: texts.get(id).cloned().unwrap_or_default(),
            transport,
            ..HookwireHarness::default()
        };
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

// ---- the harness --------------------------------------------------------------

/// One vector's host: interceptor services on loopback, the host bound to
/// them, and the scenario to play.
#[derive(Default)]
struct HookwireHarness {
    /// The vector being run: the declared path builds its scripted services
    /// and resolver from its scripts, since the CTK registry keeps its own
    /// resolvers private.
    vector: Value,
    scenario: Value,
    host: Option<Host>,
    records: RecordLog,
    tool_log: Arc<Mutex<Vec<Value>>>,
    servers: Vec<oneshot::Sender<()>>,
    /// The JSON text of each `respond` of the model script, as written in
    /// the vector's file.
    responses: Vec<String>,
    /// What the agent released to the caller, segment by segment.
    released: Arc<Mutex<String>>,
    /// Everything the run persisted (the agent's transcript), serialized.
    persisted: String,
    /// How the host reaches the services.
    transport: Transport,
}

#[async_trait]
impl Harness for HookwireHarness {
    fn name(&self) -> &str {
        "hookwire"
    }

    fn capabilities(&self) -> Vec<String> {
        CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()
    }

    fn tool_seam_host_error(&self) -> &str {
        POSTURE
    }

    fn host_surface(&self) -> agent_hooks::ctk::HostSurface {
        let mut surface = agent_hooks::ctk::HostSurface::from_capabilities(
            self.capabilities(),
            agent_hooks::ctk::ToolSeamPosture::Continue,
        );
        surface.streams_unbuffered = true;
        surface.exposure_bound = Some(EXPOSURE_BOUND.to_owned());
        surface
    }

    fn setup(&mut self, setup: VectorSetup) {
        let mut builder = Host::builder("ctk-agent", "hookwire")
            .mode(match setup.mode {
                EnforcementMode::Enforce => Mode::Enforce,
                EnforcementMode::EvaluateOnly => Mode::EvaluateOnly,
            })
            .composition(composition(&setup.composition))
            .identity_provider(identity_provider(setup.identity_provider))
            .record_sink(self.records.clone())
            .record_sink(SchemaSink::quiet());
        for (i, scripted) in setup.interceptors.into_iter().enumerate() {
            let name = format!("interceptor-{i}");
            let endpoint = self.serve(ScriptedService {
                name: name.clone(),
                inner: scripted,
            });
            builder = builder.bind(InterceptorBinding::remote(name, endpoint));
        }
        if let Some(resolver) = setup.resolver {
            builder = builder.approval_resolver(self.approval_service(ScriptedResolver(resolver)));
        }
        if !setup.redact_for_approval.is_empty() {
            let paths = setup.redact_for_approval;
            builder = builder.approval_redactor(move |ctx| redact(ctx, &paths));
        }
        self.host = Some(
            builder
                .build()
                .expect("the vector's host configuration is valid"),
        );
        self.scenario = setup.scenario;
    }

    async fn run(&mut self) -> RunRecord {
        let host = self.host.as_ref().expect("setup ran");
        let session = host.session("ctk-session").expect("session id");
        let model = ScenarioModel::new(&self.scenario, &self.responses);
        let tools = ScenarioTools {
            specs: self.scenario["tools"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            log: Arc::clone(&self.tool_log),
        };
        let released = Arc::clone(&self.released);
        let mut agent = Agent::new(session, model, tools)
            .incremental_output(true)
            .on_release(move |text| released.lock().expect("released").push_str(text));

        let (outcome, final_output) = match agent.start().await {
            Err(e) => ("error", Value::String(e.to_string())),
            Ok(_) => {
                let mut last = ("completed", Value::Null);
                for (content, role) in scenario_inputs(&self.scenario) {
                    let turn = match agent.run_turn(content, role).await {
                        Ok(turn) => turn,
                        Err(e) => {
                            last = ("error", Value::String(e.to_string()));
                            break;
                        }
                    };
                    last = (
                        turn.outcome_name(),
                        turn.output().cloned().unwrap_or(Value::Null),
                    );
                    if !turn.is_completed() {
                        break;
                    }
                }
                last
            }
        };
        let reason = if outcome == "completed" {
            ShutdownReason::Completed
        } else {
            ShutdownReason::Error
        };
        let shutdown = agent.shutdown(reason).await;
        self.persisted = serde_json::to_string(agent.transcript()).unwrap_or_default();

        let records = self.records.session(agent.session().id());
        RunRecord {
            outcome: outcome.to_owned(),
            final_output,
            tool_invocations: self.tool_log.lock().expect("tool log").clone(),
            error: shutdown.err().map(|e| e.to_string()),
            identities: records
                .iter()
                .map(|r| IdentityPair {
                    input_identity: r.input_identity.clone(),
                    enforced_identity: r.enforced_identity.clone(),
                })
                .collect(),
            records: records.iter().map(|r| r.to_json()).collect(),
            ..RunRecord::default()
        }
    }

    fn setup_declared(
        &mut self,
        setup: VectorSetup,
        document: Value,
        registry: HostRegistry,
    ) -> Result<(), DeclarationError> {
        let ctk = Arc::new(registry);
        let mut endpoints = Vec::new();
        for (i, rules) in interceptor_scripts(&self.vector).into_iter().enumerate() {
            let name = format!("script-{i}");
            let recorder = (i == 0).then(|| Recorder::new(&ctk));
            endpoints.push(self.serve(ScriptedService {
                name,
                inner: Box::new(RuleScript { rules, recorder }),
            }));
        }
        let approval_rules = self.vector["approval_script"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let paths = setup.redact_for_approval;
        let served = self.approval_service(ScriptedResolver(Box::new(RuleResolver {
            rules: approval_rules,
        })));
        let ours = Registry::with_surface(our_surface(ctk.surface()))
            .for_conformance_kit()
            .kind("ctk.scripted", move |config, ctx| {
                let i = config
                    .get("script")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| "config.script must be an unsigned integer index".to_owned())?;
                let endpoint = usize::try_from(i)
                    .ok()
                    .and_then(|i| endpoints.get(i))
                    .ok_or_else(|| {
                        format!("config.script is out of range for binding {}", ctx.id)
                    })?;
                Ok(InterceptorBinding::remote(ctx.id, endpoint.clone()))
            })
            .and_then(|r| {
                r.identity_provider("ctk-fault", |_| panic!("ctk scripted provider fault"))
            })
            .and_then(|r| r.approval_resolver("ctk-scripted", served))
            .and_then(|r| r.approval_redactor("ctk-redact", move |ctx| redact(ctx, &paths)))
            .map_err(refusal_of)?;
        let host = Declaration::from_value(&document)
            .and_then(|d| {
                Host::declared("ctk-agent", "hookwire")
                    .record_sink(self.records.clone())
                    .record_sink(SchemaSink::quiet())
                    .load(&d, &ours)
            })
            .map_err(refusal_of)?;
        self.host = Some(host);
        self.scenario = setup.scenario;
        Ok(())
    }

    fn teardown(&mut self) {
        self.host = None;
        for stop in self.servers.drain(..) {
            let _ = stop.send(());
        }
    }
}

impl HookwireHarness {
    /// The incremental-output expectations the runner of this SDK version
    /// does not assert yet: `released_output` (compared exactly) and
    /// `persisted_must_not_contain`.
    fn incremental_failures(&self, vector: &Value) -> Vec<String> {
        let expect = &vector["expect"];
        let mut failures = Vec::new();
        if let Some(want) = expect.get("released_output") {
            let got = self.released.lock().expect("released").clone();
            if want.as_str() != Some(got.as_str()) {
                failures.push(format!(
                    "released_output: expected {want}, released {got:?}"
                ));
            }
        }
        for needle in expect["persisted_must_not_contain"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if self.persisted.contains(needle) {
                failures.push(format!("persisted contains {needle:?}"));
            }
        }
        failures
    }

    /// Puts `resolver` behind an approval service, so that the vector's
    /// approvals travel hookwire's approval wire: the host's
    /// `StreamResolver` sends each request on its `Resolve` stream, and an
    /// in-process approver on the service's queue answers it with
    /// `resolver` (or fails it, which the host records as
    /// `approval_resolver_failed`, when the resolver errs or panics). The
    /// service stops at teardown.
    fn approval_service(&mut self, resolver: ScriptedResolver) -> StreamResolver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let listener = tokio::net::TcpListener::from_std(listener).expect("inside the runtime");
        // The harness host authenticates as the one host the service knows.
        let access = Access::new(
            &AccessConfig::default().host(PrincipalConfig::token("ctk-host", CTK_HOST_TOKEN)),
        )
        .expect("access list");
        let running = ApprovalServer::new(access)
            .spawn_with_listeners(listener, None)
            .expect("approval service");
        let endpoint = running.endpoint();
        let queue = running.queue().clone();
        let resolver = Arc::new(resolver);
        let (stop, stopped) = oneshot::channel::<()>();
        // Subscribed before the host can send anything: no request is missed.
        let mut sub = queue.subscribe();
        tokio::spawn(async move {
            let approver = async {
                while let Ok(event) = sub.events.recv().await {
                    let QueueEvent::Added(pending) = event else {
                        continue;
                    };
                    let (queue, resolver) = (queue.clone(), Arc::clone(&resolver));
                    tokio::spawn(async move {
                        let answer = AssertUnwindSafe(resolver.resolve(&pending.request))
                            .catch_unwind()
                            .await;
                        match answer {
                            Ok(Ok(answer)) => {
                                let scripted = ApproverIdentity::in_process("ctk-scripted");
                                let resolution = answer.resolution;
                                let _ = queue.resolve(&pending.id, &scripted, resolution).await;
                            }
                            _ => {
                                let _ = queue
                                    .fail(&pending.id, "the scripted resolver failed")
                                    .await;
                            }
                        }
                    });
                }
            };
            tokio::select! {
                () = approver => {}
                _ = stopped => {}
            }
            let _ = running.shutdown().await;
        });
        self.servers.push(stop);
        StreamResolver::builder(endpoint)
            .bearer_token(CTK_HOST_TOKEN)
            .build()
            .expect("approval stream resolver")
    }

    /// Serves `service` on 127.0.0.1:0 in the background and returns its
    /// endpoint; the server stops gracefully at teardown.
    fn serve(&mut self, service: ScriptedService) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local address");
        let listener = tokio::net::TcpListener::from_std(listener).expect("inside the runtime");
        let (stop, stopped) = oneshot::channel::<()>();
        let signal = async move {
            let _ = stopped.await;
        };
        match self.transport {
            Transport::Multiplex => {
                let router = Server::builder().service(service);
                tokio::spawn(async move {
                    if let Err(e) = router.serve_with_listener(listener, signal).await {
                        eprintln!("interceptor service on {addr} failed: {e}");
                    }
                });
            }
            Transport::Unary => {
                let service = GrpcAdapter::new(service).unary_only().into_server();
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                tokio::spawn(async move {
                    let served = tonic::transport::Server::builder()
                        .add_service(service)
                        .serve_with_incoming_shutdown(incoming, signal)
                        .await;
                    if let Err(e) = served {
                        eprintln!("interceptor service on {addr} failed: {e}");
                    }
                });
            }
        }
        self.servers.push(stop);
        format!("http://{addr}")
    }
}

/// The inputs of the scenario, one per turn: `input`, or `inputs` for a
/// multi-turn scenario.
fn scenario_inputs(scenario: &Value) -> Vec<(Value, InputRole)> {
    let one = |input: &Value| {
        let role = match input["role"].as_str() {
            Some("system") => InputRole::System,
            Some("external") => InputRole::External,
            _ => InputRole::User,
        };
        (input["content"].clone(), role)
    };
    match (&scenario["inputs"], &scenario["input"]) {
        (Value::Array(inputs), _) => inputs.iter().map(one).collect(),
        (_, input @ Value::Object(_)) => vec![one(input)],
        _ => Vec::new(),
    }
}

// ---- scripted interceptors over the wire ----------------------------------------

/// A scripted CTK interceptor as a hookwire interceptor service: our
/// context goes in as the spec JSON, its verdict comes back as the spec
/// JSON, unvalidated (the host must see a scripted fault to deny it).
struct ScriptedService {
    name: String,
    inner: Box<dyn agent_hooks::Interceptor>,
}

#[async_trait]
impl Interceptor for ScriptedService {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest(self.name.clone(), "ctk")
    }

    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        let Value::Object(context) = ctx.to_json() else {
            unreachable!("a context is a JSON object");
        };
        let verdict = self.inner.intercept(&context).await;
        let wire = serde_json::to_value(&verdict).expect("a CTK verdict serializes");
        verdict_from_spec_json(&wire)
    }
}

/// Builds a domain verdict from the spec JSON shape member by member,
/// without §5 validation: invalid shapes must reach the host as such.
fn verdict_from_spec_json(v: &Value) -> Verdict {
    let string = |key: &str| v[key].as_str().map(str::to_owned);
    let object = |key: &str| v[key].as_object().cloned();
    Verdict {
        decision: v["decision"]
            .as_str()
            .and_then(Decision::parse)
            .unwrap_or(Decision::Deny),
        reason: string("reason"),
        message: string("message"),
        warnings: v["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| Warning {
                reason: w["reason"].as_str().map(str::to_owned),
                message: w["message"].as_str().map(str::to_owned),
            })
            .collect(),
        approval: object("approval"),
        transform: v["transform"].as_object().map(|t| Transform {
            path: t
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            value: t.get("value").cloned().unwrap_or(Value::Null),
        }),
        evidence: object("evidence"),
        result_labels: v["result_labels"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect(),
    }
}

/// The scripted CTK resolver behind hookwire's resolver trait (in-process).
struct ScriptedResolver(Box<dyn agent_hooks::ApprovalResolver>);

impl ApprovalResolver for ScriptedResolver {
    fn resolve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<ApprovalAnswer, BoxError>> {
        Box::pin(async move {
            let Value::Object(context) = request.context.to_json() else {
                return Err("the approval context is not an object".into());
            };
            let verdict: agent_hooks::Verdict = serde_json::from_value(request.verdict.to_json())?;
            let interception_point =
                serde_json::from_value(Value::from(request.interception_point.as_str()))?;
            let asked = agent_hooks::ApprovalRequest {
                context_identity: request.context_identity.clone(),
                interception_point,
                verdict: &verdict,
                context: &context,
            };
            let answer = self.0.resolve(asked).await;
            Ok(ApprovalResolution {
                outcome: Some(match answer.outcome {
                    agent_hooks::ApprovalOutcome::Approve => ApprovalOutcome::Approve,
                    agent_hooks::ApprovalOutcome::Reject => ApprovalOutcome::Reject,
                    agent_hooks::ApprovalOutcome::Unresolved => ApprovalOutcome::Unresolved,
                }),
                context_identity: answer.context_identity,
                verdict: answer
                    .verdict
                    .map(|v| serde_json::to_value(&v).map(|j| verdict_from_spec_json(&j)))
                    .transpose()?,
            }
            .into())
        })
    }
}

/// The CTK redaction convention: each listed §5.2 path in the target is
/// replaced with `"[redacted]"` (the write-back mirrors it into the
/// target's field); a path that does not resolve is left alone.
fn redact(ctx: &AgentContext, paths: &[String]) -> AgentContext {
    let mut redacted = ctx.clone();
    if let Some(target) = redacted.target_mut() {
        for path in paths {
            let _ = hookwire::path::apply(target, path, Value::from("[redacted]"));
        }
    }
    redacted
}

fn composition(config: &agent_hooks::CompositionConfig) -> Composition {
    let profile: Profile = config
        .profile
        .as_str()
        .parse()
        .expect("the four CTK profiles are hookwire's");
    let synthesis = |p: Option<agent_hooks::SynthesisPolicy>| {
        p.map(|p| match p {
            agent_hooks::SynthesisPolicy::Deny => Synthesis::Deny,
            agent_hooks::SynthesisPolicy::Approval => Synthesis::Approval,
        })
    };
    Composition {
        profile,
        on_approval: config.on_approval.map(|o| match o {
            agent_hooks::OnApproval::Stop => OnApproval::Stop,
            agent_hooks::OnApproval::Resume => OnApproval::Resume,
        }),
        on_disagreement: synthesis(config.on_disagreement),
        on_transform_conflict: synthesis(config.on_transform_conflict),
    }
}

fn identity_provider(provider: CtkIdentityProvider) -> IdentityProvider {
    match provider {
        CtkIdentityProvider::JcsSha256 => IdentityProvider::JcsSha256,
        CtkIdentityProvider::Null => IdentityProvider::Null,
        CtkIdentityProvider::Custom { name, f } => {
            IdentityProvider::custom(name, move |ctx: &AgentContext| match ctx.to_json() {
                Value::Object(context) => Ok(f(&context)),
                _ => Err("the context is not an object".into()),
            })
            .expect("CTK provider names follow §10.1")
        }
    }
}

// ---- the declared path ------------------------------------------------------------

/// The scripts of a vector, by index: `interceptor_scripts`, or the single
/// `interceptor_script`.
fn interceptor_scripts(vector: &Value) -> Vec<Vec<Value>> {
    match &vector["interceptor_scripts"] {
        Value::Array(lists) => lists
            .iter()
            .map(|l| l.as_array().cloned().unwrap_or_default())
            .collect(),
        _ => vec![
            vector["interceptor_script"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        ],
    }
}

/// Hands every context script 0 sees to the CTK's own `ctk.scripted`
/// interceptor (the one the runner reads `expect.interceptions` from), by
/// way of a record-only SDK emitter built from the CTK registry: its
/// resolvers are reachable only through the SDK loader.
struct Recorder(Option<tokio::sync::Mutex<agent_hooks::InterceptionEmitter>>);

impl Recorder {
    fn new(ctk: &HostRegistry) -> Self {
        let probe = json!({
            "declaration": "agent-hooks-declaration/1.0",
            "configuration": {
                "mode": "evaluate_only",
                "identity_provider": null,
                "timeouts": {"interceptor_ms": null, "approval_resolver_ms": null},
                "records": {"max_buffered": 1},
            },
            "bindings": [{"id": "recorder", "kind": "ctk.scripted", "config": {"script": 0}}],
        });
        Self(
            agent_hooks::InterceptionEmitter::from_declaration_value(probe, ctk)
                .ok()
                .map(tokio::sync::Mutex::new),
        )
    }

    async fn record(&self, context: &serde_json::Map<String, Value>) {
        if let Some(emitter) = &self.0 {
            let mut seen = context.clone();
            emitter.lock().await.emit_unchecked(&mut seen).await;
        }
    }
}

/// One vector script evaluated by the CTK engine, behind the SDK's
/// interceptor trait so it is served like the field-based path's.
struct RuleScript {
    rules: Vec<Value>,
    recorder: Option<Recorder>,
}

#[async_trait]
impl agent_hooks::Interceptor for RuleScript {
    async fn intercept(&self, context: &serde_json::Map<String, Value>) -> agent_hooks::Verdict {
        if let Some(recorder) = &self.recorder {
            recorder.record(context).await;
        }
        let wire = agent_hooks::ctk_engine::scripted_intercept(
            &self.rules,
            &Value::Object(context.clone()),
        );
        let fault = wire.get("__ctk_fault__").and_then(Value::as_str);
        if fault == Some("mutate") {
            return agent_hooks::verdict_from_wire(
                &json!({"decision": "allow", "reason": "ctk:mutated"}),
            )
            .expect("a static allow");
        }
        let invalid = || agent_hooks::Verdict {
            decision: agent_hooks::Decision::Transform,
            ..agent_hooks::verdict_from_wire(&json!({"decision": "allow"})).expect("a static allow")
        };
        if fault.is_some() {
            return invalid();
        }
        agent_hooks::verdict_from_wire(&wire).unwrap_or_else(|_| invalid())
    }
}

/// A vector's `approval_script` evaluated by the CTK engine.
struct RuleResolver {
    rules: Vec<Value>,
}

#[async_trait]
impl agent_hooks::ApprovalResolver for RuleResolver {
    async fn resolve(
        &self,
        request: agent_hooks::ApprovalRequest<'_>,
    ) -> agent_hooks::ApprovalResolution {
        let identity = request.context_identity.clone().unwrap_or_default();
        let out = agent_hooks::ctk_engine::scripted_resolve(
            &self.rules,
            &Value::Object(request.context.clone()),
            &identity,
        );
        if out.get("__ctk_fault__").is_some() {
            return agent_hooks::ApprovalResolution {
                outcome: agent_hooks::ApprovalOutcome::Approve,
                context_identity: request.context_identity.clone(),
                verdict: Some(agent_hooks::Verdict {
                    decision: agent_hooks::Decision::Transform,
                    ..agent_hooks::verdict_from_wire(&json!({"decision": "allow"}))
                        .expect("a static allow")
                }),
            };
        }
        let outcome = match out["outcome"].as_str() {
            Some("approve") => agent_hooks::ApprovalOutcome::Approve,
            Some("reject") => agent_hooks::ApprovalOutcome::Reject,
            _ => agent_hooks::ApprovalOutcome::Unresolved,
        };
        let echoed = out["context_identity"].as_str().unwrap_or_default();
        agent_hooks::ApprovalResolution {
            outcome,
            context_identity: (!echoed.is_empty() || request.context_identity.is_some())
                .then(|| echoed.to_owned()),
            verdict: out
                .get("verdict")
                .and_then(|v| agent_hooks::verdict_from_wire(v).ok()),
        }
    }
}

/// The CTK registry's code surface as hookwire's.
fn our_surface(ctk: &agent_hooks::HostSurface) -> HostSurface {
    HostSurface {
        interception_points: ctk
            .interception_points
            .iter()
            .filter_map(|p| p.as_str().parse().ok())
            .collect(),
        capabilities: ctk.capabilities.clone(),
        profiles: ctk
            .profiles
            .iter()
            .filter_map(|(profile, knobs)| {
                let profile: Profile = profile.as_str().parse().ok()?;
                let support = KnobSupport::all(profile)
                    .with_values("on_approval", knobs.on_approval.iter().map(String::as_str))
                    .with_values(
                        "on_disagreement",
                        knobs.on_disagreement.iter().map(String::as_str),
                    )
                    .with_values(
                        "on_transform_conflict",
                        knobs.on_transform_conflict.iter().map(String::as_str),
                    );
                Some((profile, support))
            })
            .collect(),
        tool_seam_host_error: match ctk.tool_seam_host_error {
            agent_hooks::ctk::ToolSeamPosture::Continue => Posture::Continue,
            agent_hooks::ctk::ToolSeamPosture::Terminate => Posture::Terminate,
        },
        streams_unbuffered: ctk.streams_unbuffered,
        exposure_bound: ctk.exposure_bound.clone(),
        declaration_versions: ctk.declaration_versions.clone(),
    }
}

/// hookwire's refusal as the CTK's load outcome.
fn refusal_of(e: hookwire_client::Error) -> DeclarationError {
    match e.refusal() {
        Some(r) => DeclarationError {
            class: DeclarationErrorClass::from_code(&r.class.code())
                .expect("hookwire's classes are the §7.7.6 classes"),
            findings: r
                .findings
                .iter()
                .map(|f| agent_hooks::declaration::Finding {
                    pointer: f.pointer.clone(),
                    detail: f.detail.clone(),
                })
                .collect(),
            accepted: r.accepted.clone(),
        },
        None => DeclarationError::new(DeclarationErrorClass::BindingRejected, "", e.to_string()),
    }
}

// ---- the scenario's mock model and tools ----------------------------------------

/// Plays back `scenario.model_script`, one response per call: a chunked
/// stream when the step has `stream`, otherwise the step's JSON text as
/// written in the vector (its numbers unparsed).
struct ScenarioModel {
    script: Mutex<VecDeque<(Value, Option<String>)>>,
}

impl ScenarioModel {
    fn new(scenario: &Value, texts: &[String]) -> Self {
        let script = scenario["model_script"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, step)| (step["respond"].clone(), texts.get(i).cloned()))
            .collect();
        Self {
            script: Mutex::new(script),
        }
    }

    fn next_step(&self) -> Option<(Value, Option<String>)> {
        self.script.lock().expect("model script").pop_front()
    }

    fn peek_streams(&self) -> bool {
        self.script
            .lock()
            .expect("model script")
            .front()
            .is_some_and(|(respond, _)| respond.get("stream").is_some())
    }
}

impl Model for ScenarioModel {
    fn id(&self) -> &str {
        "mock"
    }

    fn respond<'a>(&'a self, _: &'a [Value]) -> BoxFuture<'a, Result<ModelResponse, BoxError>> {
        let next = self.next_step();
        Box::pin(async move {
            let (respond, _) = next.ok_or("the scenario's model script is exhausted")?;
            Ok(serde_json::from_value(respond)?)
        })
    }

    fn respond_json<'a>(
        &'a self,
        _: &'a [Value],
    ) -> Option<BoxFuture<'a, Result<String, BoxError>>> {
        if self.peek_streams() {
            return None;
        }
        let next = self.next_step();
        Some(Box::pin(async move {
            match next {
                Some((_, Some(text))) => Ok(text),
                Some((respond, None)) => Ok(serde_json::to_string(&respond)?),
                None => Err("the scenario's model script is exhausted".into()),
            }
        }))
    }

    fn respond_stream<'a>(&'a self, _: &'a [Value]) -> Option<ChunkStream<'a>> {
        if !self.peek_streams() {
            return None;
        }
        let (respond, _) = self.next_step()?;
        let mut events: Vec<Result<StreamEvent, BoxError>> = respond["stream"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                Ok(StreamEvent::Chunk(
                    c.as_str().unwrap_or_default().to_owned(),
                ))
            })
            .collect();
        if respond["stream_truncated"].as_bool() == Some(true) {
            events.push(Err("the stream broke".into()));
        } else {
            let tool_calls: Vec<ToolCall> =
                serde_json::from_value(respond["tool_calls"].clone()).unwrap_or_default();
            events.push(Ok(StreamEvent::Finished {
                finish_reason: respond["finish_reason"]
                    .as_str()
                    .unwrap_or("stop")
                    .to_owned(),
                tool_calls,
            }));
        }
        Some(futures::stream::iter(events).boxed())
    }
}

/// The text of each vector file's model-script responses, by vector id,
/// sliced from the file without parsing their numbers.
fn vector_texts() -> Result<HashMap<String, Vec<String>>, String> {
    #[derive(serde::Deserialize)]
    struct File<'a> {
        id: String,
        #[serde(borrow, default)]
        scenario: Option<Scenario<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Scenario<'a> {
        #[serde(borrow, default)]
        model_script: Vec<Step<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Step<'a> {
        #[serde(borrow)]
        respond: &'a RawValue,
    }
    let dir = vectors_dir();
    let mut texts = HashMap::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("AH-CTK-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).map_err(|e| format!("{name}: {e}"))?;
        let file: File<'_> = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
        let steps = file.scenario.map(|s| s.model_script).unwrap_or_default();
        texts.insert(
            file.id,
            steps.iter().map(|s| s.respond.get().to_owned()).collect(),
        );
    }
    Ok(texts)
}

/// The scenario's tools: the first behavior whose `when_args` matches (or
/// that has none) answers. Every invocation is logged as received.
struct ScenarioTools {
    specs: Vec<Value>,
    log: Arc<Mutex<Vec<Value>>>,
}

impl Toolbox for ScenarioTools {
    fn names(&self) -> Vec<String> {
        self.specs
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.log
            .lock()
            .expect("tool log")
            .push(json!({"name": name, "args": args}));
        let behavior = self
            .specs
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["behavior"].as_array())
            .and_then(|bs| {
                bs.iter()
                    .find(|b| b.get("when_args").is_none_or(|w| w == args))
            })
            .cloned();
        Box::pin(async move {
            let Some(b) = behavior else {
                return Err(ToolError::new(format!("no behavior of {name} matches")));
            };
            if b["is_error"].as_bool() == Some(true) {
                Err(ToolError::new(b["return"].clone()))
            } else {
                Ok(b["return"].clone())
            }
        })
    }
}

// ---- vectors, filters and the report --------------------------------------------

/// `cargo test <filter>` hands the filter to every test binary: run only
/// when no filter is given or one matches this binary's name.
fn skipped_by_cli_filter() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("conformance: test");
        return true;
    }
    if args.iter().any(|a| a == "--ignored") {
        return true;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    !filters.is_empty() && !filters.iter().any(|f| "conformance".contains(f.as_str()))
}

/// The ctk-fault identity provider panics on every call by design; the host
/// catches it. Keep its expected traces out of the report.
fn silence_expected_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str));
        if payload != Some(CTK_FAULT_PANIC) {
            default(info);
        }
    }));
}

/// Loads the vectors, fetching them first when they are absent.
fn load_vectors() -> Result<Vec<Value>, String> {
    let root = hookwire_testkit::workspace_root();
    let dir = vectors_dir();
    let present = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|mut it| {
            it.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("AH-CTK-")))
        })
    };
    if !present(&dir) {
        let script = root.join("scripts/fetch-ctk-vectors.sh");
        eprintln!(
            "conformance: no vectors in {}; running {}",
            dir.display(),
            script.display()
        );
        let status = Command::new("bash")
            .arg(&script)
            .current_dir(root)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !status.success() || !present(&dir) {
            return Err(format!(
                "the CTK vectors are missing from {} and {} could not fetch them ({status}); \
                 it needs python3 with pip and access to PyPI",
                dir.display(),
                script.display()
            ));
        }
    }
    agent_hooks::ctk::load_vectors(&dir).map_err(|e| format!("loading {}: {e}", dir.display()))
}

/// Where the vectors are: `HOOKWIRE_CTK_VECTORS`, or `.cache/ctk/vectors`.
fn vectors_dir() -> PathBuf {
    match std::env::var_os("HOOKWIRE_CTK_VECTORS") {
        Some(d) => d.into(),
        None => hookwire_testkit::workspace_root().join(".cache/ctk/vectors"),
    }
}

/// The part a vector reports under; the early vectors carry none.
fn part_of(vector: &Value) -> String {
    match vector["part"].as_str() {
        Some(p) if !p.is_empty() => p.to_owned(),
        _ => "core".to_owned(),
    }
}

fn print_result(vector: &Value, r: &VectorResult) {
    let title = vector["title"].as_str().unwrap_or_default();
    match r.status {
        "pass" => println!("  PASS {}  {title}", r.id),
        "skip" => println!("  SKIP {}  {title}\n       skipped: {}", r.id, r.detail),
        _ => {
            println!("  FAIL {}  {title}", r.id);
            for f in &r.failures {
                println!("       - {}", f.replace('\n', "\n         "));
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

struct Report {
    parts: BTreeMap<String, Tally>,
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Report {
    fn new(results: &[(Value, VectorResult)]) -> Self {
        let mut parts: BTreeMap<String, Tally> = BTreeMap::new();
        for (vector, r) in results {
            let tally = parts.entry(part_of(vector)).or_default();
            match r.status {
                "pass" => tally.passed += 1,
                "skip" => tally.skipped += 1,
                _ => tally.failed += 1,
            }
        }
        let sum = |f: fn(&Tally) -> usize| parts.values().map(f).sum();
        Self {
            passed: sum(|t| t.passed),
            failed: sum(|t| t.failed),
            skipped: sum(|t| t.skipped),
            parts,
        }
    }

    fn summary(&self) -> String {
        format!(
            "conformance: {} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }

    fn table(&self) -> String {
        let width = self.parts.keys().map(String::len).max().unwrap_or(4).max(4);
        let mut out = format!("per part:\n  {:<width$}  passed  failed  skipped\n", "part");
        for (part, t) in &self.parts {
            let _ = writeln!(
                out,
                "  {part:<width$}  {:>6}  {:>6}  {:>7}",
                t.passed, t.failed, t.skipped
            );
        }
        out
    }

    fn markdown(&self, results: &[(Value, VectorResult)], summaries: &[String]) -> String {
        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Conformance\n\n\
             <!-- Generated by `HOOKWIRE_WRITE_CONFORMANCE=1 cargo test -p hookwire-tests --test conformance`; do not edit. -->\n\n\
             hookwire's host runs the official AGENT-HOOKS-0.1 conformance vectors with every\n\
             scripted interceptor served as a gRPC interceptor service (hookwire-server on\n\
             127.0.0.1) and bound to the host as a remote interceptor; the scenario runs through\n\
             the reference agent loop of hookwire-client. Every vector runs twice: the services\n\
             called over the eight unary RPCs, and over the `Multiplex` stream. Each vector's scripted approval resolver\n\
             sits behind a hookwire approval service: the host reaches it with a `StreamResolver`\n\
             over the service's `Resolve` stream (request, context and echoed identity on the wire).\n\
             Model responses enter the host as the vector's own JSON text, decoded exactly.\n\n\
             ## Claim\n\n\
             `(hookwire, 0.1.0, agent-hooks/0.1, [{plain_caps}], [sequential/first_deny, sequential/run_all, parallel/strictest, parallel/unanimous], jcs-sha256, rust@hookwire-client 0.1.0)`\n\n\
             | Declared | Value |\n| --- | --- |\n\
             | Capabilities (§3.2, §13.1) | {caps} |\n\
             | Posture `tool_seam_host_error` (§6.2) | `{POSTURE}`: a host error at the tool seam is surfaced to the model as a tool error and the loop continues |\n\
             | Identity provider (§10.1) | `jcs-sha256`, content-derived (§10.2); `null` and custom providers are supported and exercised by the vectors that select them |\n\
             | Profiles and knobs (§7.2) | `sequential/first_deny` (`on_approval`: `stop`, `resume`), `sequential/run_all`, `parallel/strictest` (`on_transform_conflict`: `deny`, `approval`), `parallel/unanimous` (`on_disagreement`: `deny`, `approval`) |\n\
             | Modes (§8) | `enforce`, `evaluate_only` |\n\
             | Output (§12.1, §12.1a) | `buffered_output: false` with incremental mediation of streamed model output; exposure bound: {EXPOSURE_BOUND}. A deny terminates the stream and withholds the unreleased rest; residue no emission evaluated is self-denied `host_error:streaming_unsupported`; nothing withheld is persisted. A deny at `output` cannot retract segments already released. Buffered answers (and `Session::output`) release nothing before the `output` verdict, and what is released is the verdicted content |\n\
             | Exact JSON (§4.4) | `int64_json` and `bigint_json`: 64-bit integers are carried exactly; an integer literal beyond the 64-bit range in a model response's JSON text denies the emission `host_error:context_invalid` before dispatch, never rounded |\n\
             | Host declaration (§7.7) | declaration vectors build the host from the vector's document through hookwire's loader (`agent-hooks-declaration/1.0`) |\n\
             | Harness-side assertions | the runner of this SDK version does not assert `released_output` and `persisted_must_not_contain`; the harness asserts them (released text, and the agent's transcript as what is persisted) |\n\n\
             Runner: {RUNNER}. Vectors: {VECTOR_SOURCE}.\n\n\
             {summary}",
            plain_caps = CAPABILITIES.join(", "),
            caps = CAPABILITIES
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", "),
            summary = summaries
                .iter()
                .map(|s| format!("**{s}**"))
                .collect::<Vec<_>>()
                .join("\\\n"),
        );
        md.push_str("\n## Results per part\n\n| Part | Passed | Failed | Skipped |\n| --- | ---: | ---: | ---: |\n");
        for (part, t) in &self.parts {
            let _ = writeln!(
                md,
                "| `{part}` | {} | {} | {} |",
                t.passed, t.failed, t.skipped
            );
        }
        md.push_str(
            "\n## Vectors\n\n\
             Vector texts are not reproduced here; they ship in the wheel above.\n\n\
             | Vector | Part | Result |\n| --- | --- | --- |\n",
        );
        for (vector, r) in results {
            let status = match r.status {
                "pass" => "pass".to_owned(),
                "skip" => format!("skip: {}", r.detail),
                _ => "**fail**".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | `{}` | {} |",
                r.id,
                part_of(vector),
                status.replace('|', "\\|")
            );
        }
        md
    }
}
