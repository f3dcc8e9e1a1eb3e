//! The CTK's scripted interceptors and resolver behind hookwire's traits:
//! spec JSON in, spec JSON out, unvalidated, so a scripted fault reaches
//! the host as such; and the vector's composition and identity provider.

use super::*;

/// A scripted CTK interceptor as a hookwire interceptor service: our
/// context goes in as the spec JSON, its verdict comes back as the spec
/// JSON, unvalidated (the host must see a scripted fault to deny it).
pub(crate) struct ScriptedService {
    /// The name its manifest gives.
    pub(crate) name: String,
    /// The CTK's scripted interceptor.
    pub(crate) inner: Box<dyn agent_hooks::Interceptor>,
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
pub(crate) fn verdict_from_spec_json(v: &Value) -> Verdict {
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
pub(crate) struct ScriptedResolver(pub(crate) Box<dyn agent_hooks::ApprovalResolver>);

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
pub(crate) fn redact(ctx: &AgentContext, paths: &[String]) -> AgentContext {
    let mut redacted = ctx.clone();
    if let Some(target) = redacted.target_mut() {
        for path in paths {
            let _ = hookwire::path::apply(target, path, Value::from("[redacted]"));
        }
    }
    redacted
}

/// The vector's composition as hookwire's.
pub(crate) fn composition(config: &agent_hooks::CompositionConfig) -> Composition {
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

/// The vector's identity provider as hookwire's.
pub(crate) fn identity_provider(provider: CtkIdentityProvider) -> IdentityProvider {
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
