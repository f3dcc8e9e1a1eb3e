//! One policy type, two ways to run it: bound in-process in a host, and
//! served over gRPC to a host that calls it remotely. For the same chain
//! and the same emissions, both hosts record the same verdicts, the same
//! attribution and the same identities — including a deny, a transform,
//! a hook that fails and a hook whose response breaks §5.5.

use hookwire::{InterceptionRecord, InterceptorResponse, Verdict};
use hookwire_client::{Host, InputRole, InterceptorBinding, ShutdownReason, ToolCall};
use hookwire_server::prelude::*;
use hookwire_server::spawn_local;
use hookwire_testkit::host;
use serde_json::{Value, json};

/// Why the policy could not decide; its text must never reach a record.
#[derive(Debug, thiserror::Error)]
#[error("policy store at db.internal:5432 rejected password hunter2")]
struct StoreDown;

/// Decides on tool calls by tool name; allows everything else with a
/// warning so that the fold through the chain is visible.
struct Gatekeeper;

#[async_trait]
impl Interceptor for Gatekeeper {
    type Response = Result<InterceptorResponse, StoreDown>;

    fn manifest(&self) -> Manifest {
        manifest("gatekeeper", "1.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> Self::Response {
        hookwire_testkit::check_context(ctx);
        Ok(Verdict::warn("gatekeeper_seen", "looked").into())
    }

    async fn pre_tool_call(&self, ctx: &AgentContext) -> Self::Response {
        hookwire_testkit::check_context(ctx);
        let verdict = match ctx.tool_name() {
            Some("shell") => Verdict::deny("shell_forbidden").with_message("no shells"),
            Some("fetch") => Verdict::transform("$target.url", json!("https://safe.example/")),
            Some("lookup") => return Err(StoreDown),
            Some("receipt") => {
                let mut response = InterceptorResponse::from(Verdict::allow());
                response.extensions.insert("Acme".into(), json!({"id": 1}));
                return Ok(response);
            }
            Some("borrowed") => Verdict::deny("host_error:context_invalid"),
            _ => Verdict::allow(),
        };
        Ok(verdict.into())
    }
}

/// Allows everything, labelling what it saw.
struct Auditor;

#[async_trait]
impl Interceptor for Auditor {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("auditor", "1.0.0")
    }

    async fn intercept(&self, ctx: &AgentContext) -> Verdict {
        hookwire_testkit::check_context(ctx);
        Verdict::allow().with_label("audited")
    }
}

const TOOLS: [&str; 6] = ["ls", "shell", "fetch", "lookup", "receipt", "borrowed"];

/// Runs the same session on `host` and returns its records.
async fn run(host: &Host, records: &hookwire_client::RecordLog) -> Vec<InterceptionRecord> {
    let session = host.session("one-policy").unwrap();
    session.start(TOOLS).await.unwrap();
    session
        .input(json!("list the files"), InputRole::User)
        .await
        .unwrap();
    for tool in TOOLS {
        let call = ToolCall::new(
            format!("call-{tool}"),
            tool,
            json!({"url": "https://evil.example/", "n": 1}),
        );
        session.pre_tool_call(&call).await.unwrap();
    }
    session.output(json!("done")).await.unwrap();
    session.shutdown(ShutdownReason::Completed).await.unwrap();
    records.records()
}

/// The record fields that must match between the two runs, as JSON.
/// Timestamps are taken when each emission happens, so they differ, and so
/// do the identities, which hash the context with its timestamp: what must
/// match is that each identity is there, and whether the chain changed the
/// context (`enforced_identity` against `input_identity`).
fn comparable(r: &InterceptionRecord) -> Value {
    let mut json = r.to_json();
    let m = json.as_object_mut().unwrap();
    m.remove("timestamp");
    let input = m.remove("input_identity").unwrap();
    let enforced = m.remove("enforced_identity").unwrap();
    assert!(input.as_str().is_some_and(|s| s.starts_with("sha256:")));
    assert!(enforced.as_str().is_some_and(|s| s.starts_with("sha256:")));
    m.insert("context_changed".into(), Value::Bool(input != enforced));
    json
}

#[tokio::test]
async fn the_same_policy_records_the_same_in_process_and_over_grpc() {
    let (builder, local_records) = host();
    let local = builder
        .interceptor("gate", Gatekeeper)
        .bind(InterceptorBinding::local("audit", Auditor))
        .build()
        .unwrap();

    let gate = spawn_local(Gatekeeper).await.unwrap();
    let audit = spawn_local(Auditor).await.unwrap();
    let (builder, remote_records) = host();
    let remote = builder
        .remote("gate", gate.endpoint())
        .remote("audit", audit.endpoint())
        .build()
        .unwrap();

    let in_process = run(&local, &local_records).await;
    let over_grpc = run(&remote, &remote_records).await;
    assert_eq!(in_process.len(), TOOLS.len() + 4);
    assert_eq!(in_process.len(), over_grpc.len());

    for (l, r) in in_process.iter().zip(&over_grpc) {
        let point = l.interception_point;
        let failed = l.verdict.reason.as_deref() == Some("host_error:interceptor_failed");
        let (mut lj, mut rj) = (comparable(l), comparable(r));
        if failed {
            // How the failure travelled differs (an error in-process, an
            // INTERNAL status over gRPC); what the record says about the
            // policy's error does not: nothing.
            for (m, how) in [(&lj, "error"), (&rj, "Internal")] {
                let message = m["verdict"]["message"].as_str().unwrap();
                assert_eq!(
                    message,
                    format!("interceptor \"gate\": call failed ({how})")
                );
                assert!(!m.to_string().contains("hunter2"), "{m}");
            }
            lj["verdict"]["message"] = Value::Null;
            rj["verdict"]["message"] = Value::Null;
        }
        assert_eq!(lj, rj, "records differ at {point}");
    }

    let tool_records = &in_process[2..2 + TOOLS.len()];
    let reasons: Vec<_> = tool_records
        .iter()
        .map(|r| {
            (
                r.verdict.decision.as_str(),
                r.verdict.reason.clone(),
                r.decided_by,
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("allow", None, None),
            ("deny", Some("shell_forbidden".into()), Some(0)),
            ("transform", None, Some(0)),
            (
                "deny",
                Some("host_error:interceptor_failed".into()),
                Some(0)
            ),
            ("deny", Some("host_error:verdict_invalid".into()), Some(0)),
            ("deny", Some("host_error:verdict_invalid".into()), Some(0)),
        ]
    );
    // The transform reached the second interceptor, which allowed, and
    // changed what the action consumes.
    assert_eq!(tool_records[2].verdicts.len(), 2);
    assert_ne!(
        tool_records[2].input_identity,
        tool_records[2].enforced_identity
    );
    assert_eq!(
        tool_records[2]
            .verdict
            .transform
            .as_ref()
            .map(|t| t.path.as_str()),
        Some("$target.url")
    );
    // One validation: the same violation is the same message both ways.
    for i in [4, 5] {
        let (l, r) = (&tool_records[i], &over_grpc[2 + i]);
        assert_eq!(l.verdict.message, r.verdict.message);
    }
    assert_eq!(
        tool_records[4].verdict.message.as_deref(),
        Some(
            "interceptor \"gate\": response extensions namespace does not match \
             ^[a-z][a-z0-9_]*$ (§5.5)"
        )
    );
    assert_eq!(
        tool_records[5].verdict.message.as_deref(),
        Some("interceptor \"gate\": verdict reason uses the reserved host_error: prefix")
    );

    gate.shutdown().await.unwrap();
    audit.shutdown().await.unwrap();
}
