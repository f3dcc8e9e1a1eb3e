//! Escalations through a real approval service: the policy escalates
//! `wire_transfer`, the proxy's host asks the service (`--approval-endpoint`,
//! its token from a file), and an approver decides on the service's queue
//! while the SDK client waits on its `tools/call` (with a progress token,
//! so the proxy may keep it informed). Approved, the call reaches the
//! server; rejected, it is a deny naming the reason and never does.

use std::collections::VecDeque;
use std::time::Duration;

use hookwire::Verdict;
use hookwire::approval::ApprovalResolution;
use hookwire_approvals::{ApprovalQueue, ApproverIdentity, QueueEvent};
use serde_json::json;

use super::{
    Proxy, Upstream, WAIT, assert_records_match, point_of, records_after_shutdown, upstream_calls,
};

/// Decides the requests reaching `queue`, in arrival order, with
/// `decisions` (true: approve); returns the requests' amounts.
pub(crate) fn approver(
    queue: ApprovalQueue,
    decisions: Vec<bool>,
) -> tokio::task::JoinHandle<Vec<u64>> {
    tokio::spawn(async move {
        let mut sub = queue.subscribe();
        let mut backlog: VecDeque<_> = std::mem::take(&mut sub.pending).into();
        let mut amounts = Vec::new();
        for approve in decisions {
            let p = match backlog.pop_front() {
                Some(p) => p,
                None => loop {
                    let event = tokio::time::timeout(WAIT, sub.events.recv())
                        .await
                        .expect("an approval request arrives")
                        .expect("the queue's events");
                    if let QueueEvent::Added(p) = event {
                        break *p;
                    }
                },
            };
            assert_eq!(p.tool_name(), Some("wire_transfer"));
            assert_eq!(p.host, "test-host", "the proxy authenticated as the host");
            amounts.push(p.target().and_then(|t| t["amount"].as_u64()).unwrap());
            let resolution = if approve {
                ApprovalResolution::approve(&p.request, Verdict::allow())
            } else {
                ApprovalResolution::reject(&p.request, Verdict::deny("payments.rejected_by_ann"))
            };
            queue
                .resolve(&p.id, &ApproverIdentity::in_process("ann"), resolution)
                .await
                .expect("the decision is accepted");
        }
        amounts
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalated_call_waits_for_an_approver_who_approves_one_and_rejects_another() {
    let proxy = Proxy::with_approvals(30_000).await;
    let decided = approver(proxy.approvals().queue().clone(), vec![true, false]);
    let scenario = json!([
        {"op": "call", "name": "wire_transfer", "arguments": {"amount": 250, "to": "acct-9"}, "progress": true},
        {"op": "call", "name": "wire_transfer", "arguments": {"amount": 9000, "to": "acct-666"}, "progress": true},
    ]);
    let out = proxy.stdio_client(&Upstream::Python, scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    let amounts = tokio::time::timeout(Duration::from_secs(5), decided)
        .await
        .expect("the approver is done")
        .expect("the approver's checks");
    assert_eq!(
        amounts,
        [250, 9000],
        "the approver saw each call's arguments"
    );

    let steps = out["steps"].as_array().unwrap();
    assert_eq!(steps[0]["is_error"], false, "{out}");
    assert_eq!(steps[0]["text"], "sent 250 to acct-9", "{out}");
    assert_eq!(steps[1]["is_error"], true, "{out}");
    let text = steps[1]["text"].as_str().unwrap();
    assert!(text.starts_with("hookwire: denied"), "{out}");
    assert!(text.contains("payments."), "the reason is named: {out}");
    assert!(
        !text.contains("acct-666"),
        "the denied arguments leaked: {out}"
    );
    // Progress notifications, if any, are the proxy's own waiting notes.
    for step in steps {
        for note in step["progress"].as_array().unwrap() {
            assert!(!note.to_string().contains("acct-"), "{out}");
        }
    }

    // Only the approved transfer reached the server.
    assert_eq!(
        upstream_calls(&proxy.calls),
        [(
            "wire_transfer".to_owned(),
            json!({"amount": 250, "to": "acct-9"})
        )]
    );
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &proxy.policy.seen());
    let pre: Vec<_> = records
        .iter()
        .filter(|r| point_of(r) == "pre_tool_call")
        .collect();
    assert_eq!(pre.len(), 2, "{records:#?}");
    assert_eq!(pre[0]["resolved_by"], "approval", "{:#}", pre[0]);
    assert_eq!(pre[0]["verdict"]["decision"], "allow", "{:#}", pre[0]);
    assert_eq!(pre[1]["verdict"]["decision"], "deny", "{:#}", pre[1]);
    proxy.verify_records();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_no_approver_decides_is_denied_at_its_deadline() {
    let proxy = Proxy::with_approvals(1_500).await;
    let scenario = json!([
        {"op": "call", "name": "wire_transfer", "arguments": {"amount": 5, "to": "acct-1"}},
    ]);
    let out = proxy.stdio_client(&Upstream::Python, scenario).await;
    assert!(out.get("fatal").is_none(), "{out}");
    let step = &out["steps"][0];
    assert_eq!(step["is_error"], true, "{out}");
    assert!(
        step["text"]
            .as_str()
            .unwrap()
            .starts_with("hookwire: denied"),
        "{out}"
    );
    assert!(upstream_calls(&proxy.calls).is_empty());
    let records = records_after_shutdown(&proxy.records).await;
    assert_records_match(&records, &proxy.policy.seen());
}
