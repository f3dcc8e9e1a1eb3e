//! The example policy through the reference agent loop, bound by its
//! manifest: every verdict kind in one turn (over the Multiplex stream, and
//! unary where the service offers that alone), and the approval seam
//! lifting its escalation.

use std::collections::BTreeMap;

use hookwire::{Decision, InterceptionPoint, ResolvedBy};
use hookwire_agent::{Agent, ToolCallOutcome};
use hookwire_client::{InputRole, InterceptorBinding, ShutdownReason, ToolCall};
use hookwire_testkit as testkit;
use serde_json::{Value, json};

use InterceptionPoint::*;

use crate::fixtures::{
    Approver, DESCRIBE_TIMEOUT, REMOTE, answer, assert_exact, calls, host_with_passthrough,
    passthrough, reason, scripted,
};
use crate::service::{Lang, Service};

/// One turn through the agent loop against the policy, bound at the points
/// it declares: allow, deny (`rm -rf`), transform (PII in the input),
/// escalate without a resolver (a large wire transfer), the AKIA block after
/// a tool, and a warning at `output`. Returns the service, for its call log.
async fn full_turn(lang: Lang, args: &[&str]) -> Service {
    full_turn_of(Service::spawn(lang, args)).await
}

/// [`full_turn`] against a service already started.
async fn full_turn_of(service: Service) -> Service {
    let (host, records, _) = host_with_passthrough(&service).await;
    for point in InterceptionPoint::ALL {
        let expected: &[&str] = match point {
            Input | PreToolCall | PostToolCall | Output => &["passthrough", REMOTE],
            _ => &["passthrough"],
        };
        assert_eq!(host.chain(point), expected, "{point:?}");
    }
    let (model, shown, tools, invoked) = scripted(vec![
        calls(&[
            ("c1", "bash", json!({"cmd": "ls -la"})),
            (
                "c2",
                "bash",
                json!({"cmd": "cd /srv && rm -rf --no-preserve-root /"}),
            ),
            (
                "c3",
                "wire_transfer",
                json!({"amount": 50000, "currency": "EUR", "to": "ACME"}),
            ),
            (
                "c4",
                "wire_transfer",
                json!({"amount": 500, "currency": "EUR", "to": "ACME"}),
            ),
            ("c5", "read_file", json!({"path": "~/.aws/credentials"})),
        ]),
        answer("Paid 500 EUR; the large transfer awaits approval. Questions: billing@example.com"),
    ]);
    let session = host.session("turn-1").unwrap();
    let mut agent = Agent::new(session, model, tools);
    let (turn, shutdown) = agent
        .run_once(
            json!("Pay invoice 42 for jane.doe@example.com, call me at +1 (555) 123-4567"),
            InputRole::User,
        )
        .await
        .unwrap();
    assert!(shutdown.proceeds());

    // transform: the model only ever saw the redacted input.
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2);
    assert_eq!(
        shown[0][0],
        json!({"role": "user", "content": "Pay invoice 42 for [redacted:email], call me at [redacted:phone]"})
    );

    // allow / deny / escalate / post-action block, per tool call.
    let outcome = |i: usize| &turn.tool_calls[i];
    assert!(matches!(outcome(0), ToolCallOutcome::Completed { .. }));
    let ToolCallOutcome::Blocked { record, .. } = outcome(1) else {
        panic!("rm -rf ran: {:?}", outcome(1));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:destructive_command")
    );
    assert_eq!(record.decided_by, Some(1), "the remote service decided");
    let ToolCallOutcome::Blocked { record, .. } = outcome(2) else {
        panic!("the large transfer ran: {:?}", outcome(2));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:approval_required")
    );
    assert!(
        record.verdict.approval.is_some(),
        "an escalation is a liftable deny"
    );
    assert_eq!(record.resolved_by, None, "no resolver registered");
    assert!(matches!(outcome(3), ToolCallOutcome::Completed { .. }));
    let ToolCallOutcome::Discarded { record, .. } = outcome(4) else {
        panic!("the AWS key reached the model: {:?}", outcome(4));
    };
    assert_eq!(
        record.verdict.reason.as_deref(),
        Some("policy:secret_in_tool_output")
    );
    let ran: Vec<_> = invoked
        .lock()
        .unwrap()
        .iter()
        .map(|(n, a)| (n.clone(), a.clone()))
        .collect();
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert!(
        ran.iter()
            .all(|(n, a)| n != "bash" || a["cmd"] == json!("ls -la"))
    );
    assert!(
        ran.iter()
            .all(|(n, a)| n != "wire_transfer" || a["amount"] == json!(500))
    );
    let tool_message = shown[1]
        .iter()
        .find(|m| m["tool_call_id"] == json!("c5"))
        .unwrap();
    assert!(!tool_message.to_string().contains("AKIA"), "{tool_message}");

    // warn: the answer is released, with the warning on the record.
    assert_eq!(
        turn.output(),
        Some(&json!(
            "Paid 500 EUR; the large transfer awaits approval. Questions: billing@example.com"
        ))
    );
    let recs = records.session("turn-1");
    let at = |p: InterceptionPoint| recs.iter().filter(move |r| r.interception_point == p);
    let input = at(Input).next().unwrap();
    assert_eq!(input.verdict.decision, Decision::Transform);
    assert_eq!(input.verdict.reason.as_deref(), Some("policy:pii_redacted"));
    let output = at(Output).next().unwrap();
    assert_eq!(output.verdict.decision, Decision::Allow);
    assert_eq!(output.verdict.warnings.len(), 1);
    assert_eq!(
        output.verdict.warnings[0].reason.as_deref(),
        Some("policy:pii_in_output")
    );
    assert_eq!(recs.len(), 2 + 1 + 2 * 2 + 5 + 3 + 1);

    // The service was called at the points it declared, and only there.
    let expected: BTreeMap<String, usize> = [
        ("input", 1),
        ("pre_tool_call", 5),
        ("post_tool_call", 3),
        ("output", 1),
    ]
    .into_iter()
    .map(|(p, n)| (p.to_owned(), n))
    .collect();
    assert_eq!(service.calls_by_point(), expected);
    service
}

/// The full turn against a service declaring the Multiplex stream: the host
/// takes it once its `Describe` probe has answered (the first emission may
/// still go unary while the probe is under way).
pub async fn policy_governs_a_full_turn(lang: Lang) {
    let service = full_turn(lang, &[]).await;
    let transports = service.calls_by_transport();
    assert!(
        transports.get("multiplex").copied().unwrap_or(0) >= 9,
        "{transports:?}"
    );
}

/// The full turn against the same service with the stream left out of its
/// manifest (`--unary-only`): every call is unary.
pub async fn policy_governs_a_full_turn_unary(lang: Lang) {
    let service = full_turn(lang, &["--unary-only"]).await;
    assert_eq!(
        service.calls_by_transport(),
        BTreeMap::from([("unary".to_owned(), 10)])
    );
}

/// The full turn against the service on an owner-only Unix socket
/// (`--unix`, a `unix:` endpoint), over the stream and, with the stream
/// left out, unary: the socket is 0600 and the same calls arrive.
pub async fn policy_governs_a_full_turn_on_a_unix_socket(lang: Lang) {
    use std::os::unix::fs::PermissionsExt;
    for unary_only in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("policy.sock");
        let args: &[&str] = if unary_only { &["--unary-only"] } else { &[] };
        let service = Service::spawn_unix(lang, &path, args);
        assert!(service.url().starts_with("unix:/"), "{}", service.url());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let service = full_turn_of(service).await;
        let transports = service.calls_by_transport();
        if unary_only {
            assert_eq!(transports, BTreeMap::from([("unary".to_owned(), 10)]));
        } else {
            assert!(
                transports.get("multiplex").copied().unwrap_or(0) >= 9,
                "{transports:?}"
            );
        }
        drop(service);
    }
}

/// The escalation is lifted by an in-process approval resolver, which is
/// shown the service's `approval` object exactly; the limit is the
/// service's `--wire-limit`.
pub async fn escalation_is_lifted_by_the_resolver(lang: Lang) {
    let service = Service::spawn(lang, &["--wire-limit", "1000"]);
    let approver = Approver::default();
    let (pass, _) = passthrough();
    let (b, records) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .approval_resolver(approver.clone())
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("approve").unwrap();
    session.start(["wire_transfer"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();

    let small = ToolCall::new(
        "t1",
        "wire_transfer",
        json!({"amount": 999.5, "to": "ACME"}),
    );
    let e = session.pre_tool_call(&small).await.unwrap();
    assert!(e.proceeds());
    assert_eq!(e.verdict().decision, Decision::Allow);

    let large = ToolCall::new(
        "t2",
        "wire_transfer",
        json!({"amount": "1000.01", "to": "ACME"}),
    );
    let e = session.pre_tool_call(&large).await.unwrap();
    assert!(e.proceeds(), "approved: {:?}", e.verdict());
    assert_eq!(e.record().resolved_by, Some(ResolvedBy::Approval));
    assert_eq!(
        e.target(),
        Some(&large.args),
        "an approved allow keeps the arguments"
    );

    let bad = ToolCall::new("t3", "wire_transfer", json!({"amount": "lots"}));
    let e = session.pre_tool_call(&bad).await.unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "policy:invalid_amount");
    assert_eq!(
        e.record().resolved_by,
        None,
        "a plain deny is not offered to the resolver"
    );
    session.shutdown(ShutdownReason::Completed).await.unwrap();

    let requests = approver.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.interception_point, PreToolCall);
    assert_eq!(
        request.verdict.reason.as_deref(),
        Some("policy:approval_required")
    );
    let approval = Value::Object(request.verdict.approval.clone().unwrap());
    assert_exact(
        &approval,
        &json!({"approver_role": "finance", "limit": 1000}),
        "approval",
    );
    assert_eq!(request.context.target(), Some(&large.args));
    assert_eq!(records.session("approve").len(), 6);

    // Without a resolver the same escalation is enforced as a deny (§9).
    let (pass, _) = passthrough();
    let (b, _) = testkit::host();
    let host = b
        .bind(pass)
        .bind(InterceptorBinding::remote(REMOTE, service.url()))
        .connect(DESCRIBE_TIMEOUT)
        .await
        .unwrap();
    let session = host.session("no-resolver").unwrap();
    session.start(["wire_transfer"]).await.unwrap();
    session.input(json!("go"), InputRole::User).await.unwrap();
    let e = session.pre_tool_call(&large).await.unwrap();
    assert!(!e.proceeds());
    assert_eq!(reason(&e), "policy:approval_required");
    assert!(
        e.verdict()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("1000"))
    );
    assert_eq!(
        e.verdict().approval.clone().map(Value::Object),
        Some(json!({"approver_role": "finance", "limit": 1000}))
    );
}
