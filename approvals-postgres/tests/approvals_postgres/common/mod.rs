//! What the gRPC-level tests of the shared queue (`grpc_edge`, `failover`)
//! have in common: one access list (a host, an approver), an instance
//! served on a database, and an approver's authenticated `Decide`.

use std::time::Duration;

use hookwire::approval::{ApprovalResolution, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use hookwire_approvals::{
    Access, AccessConfig, ApprovalServer, ApproverConfig, PrincipalConfig, RunningApprovalServer,
};
use hookwire_approvals_postgres::{PostgresOptions, shared_queue_with};

/// The host's token (`billing-agent`): may submit, never decide.
pub const HOST_TOKEN: &str = "hwa_pg_test_host_0123456789abcdef0123456789abcd";
/// Approver ann's token.
pub const ANN_TOKEN: &str = "hwa_pg_test_ann_0123456789abcdef0123456789abcde";

/// The access list every instance serves.
pub fn access() -> Access {
    Access::new(
        &AccessConfig::default()
            .host(PrincipalConfig::token("billing-agent", HOST_TOKEN))
            .approver(ApproverConfig::token("ann", ANN_TOKEN)),
    )
    .expect("access list")
}

/// Instance `instance` on the database at `url`, served on 127.0.0.1:0
/// with a 200 ms heartbeat.
pub async fn serve(url: &str, instance: &str, options: PostgresOptions) -> RunningApprovalServer {
    let queue = shared_queue_with(url, instance, options)
        .await
        .unwrap_or_else(|e| panic!("instance {instance}: {e}"));
    ApprovalServer::with_queue(queue, access())
        .name(instance)
        .heartbeat_interval(Duration::from_millis(200))
        .spawn_local()
        .await
        .expect("approval server")
}

/// `Decide` through `endpoint` with ann's token, under a spoofed name the
/// service must ignore (the name comes from the credential).
pub async fn decide_as_ann(
    endpoint: &str,
    id: &str,
    resolution: &ApprovalResolution,
) -> pb::DecisionStatus {
    let mut client = ApprovalServiceClient::connect(endpoint.to_owned())
        .await
        .expect("connect");
    let mut call = tonic::Request::new(pb::DecideRequest {
        approver: "mallory".into(),
        resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
            request_id: id.to_owned(),
            approver: String::new(),
            resolution: resolution.clone(),
        })),
    });
    call.metadata_mut().insert(
        "authorization",
        format!("Bearer {ANN_TOKEN}").parse().expect("header"),
    );
    let answer = client.decide(call).await.expect("Decide answered");
    pb::DecisionStatus::try_from(answer.into_inner().status).expect("a known status")
}
