//! The terminal approval console (`approvals/examples/approval_console.rs`) driven
//! by a script on its input, against a real approval service and a host
//! waiting on it.

use hookwire_testkit as common;

use crate::approval_common;

#[allow(dead_code)]
#[path = "../approvals/examples/approval_console.rs"]
mod console;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookwire::ResolvedBy;
use hookwire_client::{InputRole, StreamResolver, ToolCall};
use serde_json::json;

use approval_common::{BILLING_HOST_TOKEN, token_of};
use common::Scripted;

#[tokio::test]
async fn an_operator_approves_edits_and_rejects_from_the_console() {
    let policy = Scripted::escalating_tool_calls("policy", "needs_approval", "large transfer")
        .serve()
        .await;
    let service = approval_common::server()
        .spawn_local()
        .await
        .expect("approval service");
    let deadline = Duration::from_secs(60);
    let resolver = StreamResolver::builder(service.endpoint())
        .deadline(deadline)
        .host_name("billing")
        .bearer_token(BILLING_HOST_TOKEN)
        .build()
        .expect("resolver");
    let (builder, _) = common::host();
    let host = builder
        .remote("policy", policy.endpoint())
        .approval_resolver(resolver)
        .approval_deadline(deadline)
        .build()
        .expect("host");

    // Three sessions, one after the other, each waiting on the console.
    let agent = tokio::spawn(async move {
        let mut out = Vec::new();
        for (n, amount) in [(1, 100), (2, 250), (3, 9000)] {
            let s = host.session(format!("s-{n}")).expect("session");
            s.start(["wire_transfer"]).await.expect("start");
            s.input(json!("pay acme"), InputRole::User)
                .await
                .expect("input");
            let call = ToolCall::new(
                "tc",
                "wire_transfer",
                json!({"amount": amount, "to": "acme"}),
            );
            out.push(s.pre_tool_call(&call).await.expect("pre_tool_call"));
        }
        out
    });

    let script = "\
        help\n\
        wait 1 20\n\
        list\n\
        show 1\n\
        approve 1 looks fine\n\
        wait 1 20\n\
        edit 1 {\"amount\": 200, \"to\": \"acme\"}\n\
        wait 1 20\n\
        reject 1 policy:too_large\n\
        approve 1\n\
        quit\n";
    let buffer = Arc::new(Mutex::new(Vec::<u8>::new()));
    let out: console::Output = buffer.clone();
    tokio::time::timeout(
        Duration::from_secs(60),
        console::run(
            &console::Connection::new(service.endpoint(), token_of("ann")),
            script.as_bytes(),
            out,
        ),
    )
    .await
    .expect("the script ends")
    .expect("the console runs");

    let emissions = agent.await.expect("agent");
    let [approved, edited, rejected] = &emissions[..] else {
        panic!("three emissions");
    };
    assert!(approved.proceeds());
    assert_eq!(
        approved.target(),
        Some(&json!({"amount": 100, "to": "acme"}))
    );
    assert_eq!(approved.record().resolved_by, Some(ResolvedBy::Approval));
    assert!(edited.proceeds());
    assert_eq!(edited.target(), Some(&json!({"amount": 200, "to": "acme"})));
    assert_eq!(edited.record().resolved_by, Some(ResolvedBy::Approval));
    assert!(rejected.is_blocked());
    assert_eq!(rejected.reason(), Some("policy:too_large"));
    assert_eq!(rejected.record().resolved_by, Some(ResolvedBy::Rejection));

    let text = String::from_utf8(buffer.lock().expect("output").clone()).expect("utf-8");
    for expected in [
        "connected to",
        "commands: list",
        "[1] q-1  pre_tool_call  wire_transfer  args {\"amount\":100,\"to\":\"acme\"}  reason needs_approval: large transfer",
        "left  from billing",
        "\"session\": {",
        "q-1 accepted",
        "q-2 accepted",
        "q-3 accepted",
        "no pending request \"1\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}
