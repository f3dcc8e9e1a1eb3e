//! One vector's host: the scripted services on loopback (served by the
//! Rust SDK unary or over Multiplex, or by the Python package), the host
//! bound to them, its approval service, and the scenario played through
//! the reference agent loop.

use super::*;

/// One vector's host: interceptor services on loopback, the host bound to
/// them, and the scenario to play.
#[derive(Default)]
pub(crate) struct HookwireHarness {
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
    /// The Python services of this vector (the Python transport).
    python: Vec<u64>,
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
        for id in self.python.drain(..) {
            python::close(id);
        }
        for stop in self.servers.drain(..) {
            let _ = stop.send(());
        }
    }
}

impl HookwireHarness {
    /// A fresh harness for `vector`, with the model's response texts as
    /// written in its file, reaching its services over `transport`.
    pub(crate) fn new(vector: Value, responses: Vec<String>, transport: Transport) -> Self {
        Self {
            vector,
            responses,
            transport,
            ..Self::default()
        }
    }

    /// The incremental-output expectations the runner of this SDK version
    /// does not assert yet: `released_output` (compared exactly) and
    /// `persisted_must_not_contain`.
    pub(crate) fn incremental_failures(&self, vector: &Value) -> Vec<String> {
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

    /// Serves `service` on 127.0.0.1:0 in the background and returns the
    /// endpoint the host binds: that server's, or with the Python
    /// transport the Python service in front of it. Everything stops at
    /// teardown, the servers gracefully.
    fn serve(&mut self, service: ScriptedService) -> String {
        let name = service.name.clone();
        let (addr, stop) = serve_on_loopback(service, self.transport);
        self.servers.push(stop);
        if self.transport != Transport::Python {
            return format!("http://{addr}");
        }
        match python::open(&name, &addr.to_string()) {
            Ok((id, endpoint)) => {
                self.python.push(id);
                endpoint
            }
            // The host then fails closed on an unreachable service, and
            // the vector reports it.
            Err(e) => {
                eprintln!("conformance: {e}");
                "http://127.0.0.1:1".to_owned()
            }
        }
    }
}

/// Serves `service` on 127.0.0.1:0 in the background (unary only for the
/// unary transport, with the Multiplex stream otherwise): its address, and
/// the sender that stops it gracefully.
fn serve_on_loopback(
    service: ScriptedService,
    transport: Transport,
) -> (std::net::SocketAddr, oneshot::Sender<()>) {
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
    match transport {
        Transport::Multiplex | Transport::Python => {
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
    (addr, stop)
}
