//! The shared queue behind the real gRPC edge: two `ApprovalServer`s on
//! one PostgreSQL database, a host's `StreamResolver` on instance A with
//! its host token, an approver's `Decide` on instance B with an approver
//! token. The decision made on B reaches the host on A; the same decision
//! sent again through A is refused as already resolved.

use std::sync::Arc;
use std::time::Duration;

use hookwire::Verdict;
use hookwire::approval::ApprovalResolution;
use hookwire::pb;
use hookwire_approvals::{HistoryQuery, QueueEvent, RunningApprovalServer};
use hookwire_approvals_postgres::PostgresOptions;
use hookwire_client::{ApprovalResolver, StreamResolver};
use hookwire_testkit::approval_request;
use hookwire_testkit::postgres::PgCluster;
use serde_json::json;

use crate::common::{HOST_TOKEN, decide_as_ann as decide};

async fn serve(url: &str, instance: &str) -> RunningApprovalServer {
    let options = PostgresOptions {
        lease: Duration::from_millis(600),
        ..PostgresOptions::default()
    };
    crate::common::serve(url, instance, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_through_instance_b_reaches_the_host_streaming_to_instance_a() {
    let pg = PgCluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
    let url = pg.create_database("edge").unwrap();
    let a = serve(&url, "a").await;
    let b = serve(&url, "b").await;
    let mut watching_b = b.queue().subscribe();

    let resolver = Arc::new(
        StreamResolver::builder(a.endpoint())
            .bearer_token(HOST_TOKEN)
            .deadline(Duration::from_secs(30))
            .build()
            .expect("resolver"),
    );
    let asking = {
        let resolver = Arc::clone(&resolver);
        tokio::spawn(async move { resolver.resolve(&approval_request(1)).await })
    };
    let id = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(QueueEvent::Added(p)) = watching_b.events.recv().await {
                break p.id.clone();
            }
        }
    })
    .await
    .expect("B sees the request made on A");
    let pending = b.queue().get(&id).expect("pending on B");
    // The host's name comes from its credential.
    assert_eq!(pending.host, "billing-agent");

    let approved = ApprovalResolution::approve(
        &approval_request(1),
        Verdict::transform("$target", json!({"amount": 50})),
    );
    assert_eq!(
        decide(&b.endpoint(), &id, &approved).await,
        pb::DecisionStatus::Accepted
    );
    let got = tokio::time::timeout(Duration::from_secs(10), asking)
        .await
        .expect("the host answered in time")
        .expect("the asking task")
        .expect("a resolution");
    assert_eq!(got.resolution, approved);

    // The same decision through A: the first one already won.
    assert_eq!(
        decide(&a.endpoint(), &id, &approved).await,
        pb::DecisionStatus::AlreadyResolved
    );
    // Audited once accepted, once refused, under the credential's name.
    let log = a.queue().history(&HistoryQuery::latest(10)).await.unwrap();
    let seen: Vec<(&str, &str, &str)> = log
        .iter()
        .map(|r| {
            (
                r.approver.name(),
                r.instance.as_str(),
                r.acceptance.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("ann", "a", "already_resolved"), ("ann", "b", "accepted")]
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
