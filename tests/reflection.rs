//! gRPC server reflection on an interceptor service and on the approval
//! service, asked the way `grpcurl list` and `grpcurl describe` ask: with a
//! `grpc.reflection.v1` client over a real connection on 127.0.0.1:0.

use hookwire_approvals::{Access, ApprovalServer};
use hookwire_server::prelude::*;
use prost::Message;
use tokio_stream::StreamExt;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

struct AllowAll;

#[async_trait]
impl Interceptor for AllowAll {
    type Response = Verdict;
    fn manifest(&self) -> Manifest {
        manifest("allow-all", "1")
    }
}

/// One reflection request and its answer.
async fn ask(endpoint: &str, request: MessageRequest) -> MessageResponse {
    let channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = ServerReflectionClient::new(channel);
    let outbound = tokio_stream::iter([ServerReflectionRequest {
        host: String::new(),
        message_request: Some(request),
    }]);
    let mut inbound = client
        .server_reflection_info(outbound)
        .await
        .expect("reflection answers")
        .into_inner();
    let ServerReflectionResponse {
        message_response, ..
    } = inbound.next().await.expect("one answer").expect("ok");
    message_response.expect("a response")
}

/// `grpcurl list`.
async fn services(endpoint: &str) -> Vec<String> {
    match ask(endpoint, MessageRequest::ListServices(String::new())).await {
        MessageResponse::ListServicesResponse(list) => {
            let mut names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
            names.sort();
            names
        }
        other => panic!("not a service list: {other:?}"),
    }
}

/// `grpcurl describe SYMBOL`: the file declaring it, decoded.
async fn describe(endpoint: &str, symbol: &str) -> Vec<prost_types::FileDescriptorProto> {
    match ask(
        endpoint,
        MessageRequest::FileContainingSymbol(symbol.into()),
    )
    .await
    {
        MessageResponse::FileDescriptorResponse(files) => files
            .file_descriptor_proto
            .iter()
            .map(|b| prost_types::FileDescriptorProto::decode(b.as_slice()).unwrap())
            .collect(),
        other => panic!("not a file descriptor: {other:?}"),
    }
}

#[tokio::test]
async fn an_interceptor_service_lists_and_describes_itself() {
    let running = spawn_local(AllowAll).await.unwrap();
    let endpoint = running.endpoint();
    let listed = services(&endpoint).await;
    for expected in [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "hookwire.v1.Interceptor",
    ] {
        assert!(
            listed.iter().any(|s| s == expected),
            "{expected} in {listed:?}"
        );
    }
    let files = describe(&endpoint, "hookwire.v1.Interceptor").await;
    let service = files
        .iter()
        .flat_map(|f| &f.service)
        .find(|s| s.name() == "Interceptor")
        .expect("the service's descriptor");
    let methods: Vec<_> = service.method.iter().map(|m| m.name()).collect();
    assert!(
        methods.contains(&"PreToolCall") && methods.contains(&"Describe"),
        "{methods:?}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_approval_service_lists_and_describes_itself() {
    let running = ApprovalServer::new(Access::default())
        .spawn_local()
        .await
        .unwrap();
    let endpoint = running.endpoint();
    let listed = services(&endpoint).await;
    assert!(
        listed.iter().any(|s| s == "hookwire.v1.ApprovalService"),
        "{listed:?}"
    );
    let files = describe(&endpoint, "hookwire.v1.ApprovalRequest").await;
    let request = files
        .iter()
        .flat_map(|f| &f.message_type)
        .find(|m| m.name() == "ApprovalRequest")
        .expect("the message's descriptor");
    assert!(
        request
            .field
            .iter()
            .any(|f| f.name() == "trace_context" && f.number() == 7),
        "the trace context field is described"
    );
    running.shutdown().await.unwrap();
}
