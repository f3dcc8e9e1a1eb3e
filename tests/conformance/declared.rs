//! The declared path (§7.7.9): the vector's scripts evaluated by the CTK
//! engine, the recorder feeding the runner's `expect.interceptions`, and
//! the CTK registry's surface mirrored by hookwire's.

use super::*;

/// The scripts of a vector, by index: `interceptor_scripts`, or the single
/// `interceptor_script`.
pub(crate) fn interceptor_scripts(vector: &Value) -> Vec<Vec<Value>> {
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
pub(crate) struct Recorder(Option<tokio::sync::Mutex<agent_hooks::InterceptionEmitter>>);

impl Recorder {
    /// A recorder over the CTK registry's `ctk.scripted` script 0 (none
    /// when the registry refuses the probe document).
    pub(crate) fn new(ctk: &HostRegistry) -> Self {
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
pub(crate) struct RuleScript {
    /// The script's rules, in the vector's order.
    pub(crate) rules: Vec<Value>,
    /// Set for script 0: what it sees reaches the runner.
    pub(crate) recorder: Option<Recorder>,
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
pub(crate) struct RuleResolver {
    /// The `approval_script` rules.
    pub(crate) rules: Vec<Value>,
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
pub(crate) fn our_surface(ctk: &agent_hooks::HostSurface) -> HostSurface {
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
pub(crate) fn refusal_of(e: hookwire_client::Error) -> DeclarationError {
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
