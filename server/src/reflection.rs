//! gRPC server reflection (`grpc.reflection.v1` and the older `v1alpha`
//! that some clients still ask first), so `grpcurl list` and `grpcurl
//! describe` work against an interceptor service or an approval service
//! without the .proto files.
//!
//! Both know every hookwire service and message (the descriptor set the
//! root crate's build script encodes) and `grpc.health.v1`. The
//! descriptors are compiled in; should they ever fail to load, the
//! service is served without reflection and the failure is logged, since
//! reflection is an operator's convenience, never a reason not to serve.

use tonic_reflection::server::v1::{ServerReflection, ServerReflectionServer};
use tonic_reflection::server::v1alpha;

fn builder() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(hookwire::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// The `grpc.reflection.v1` service, or `None` (logged) if the compiled-in
/// descriptors do not load.
pub fn v1() -> Option<ServerReflectionServer<impl ServerReflection>> {
    builder()
        .build_v1()
        .inspect_err(|e| tracing::error!(error = %e, "gRPC reflection unavailable"))
        .ok()
}

/// The `grpc.reflection.v1alpha` service, or `None` (logged).
pub fn v1alpha() -> Option<v1alpha::ServerReflectionServer<impl v1alpha::ServerReflection>> {
    builder()
        .build_v1alpha()
        .inspect_err(|e| tracing::error!(error = %e, "gRPC reflection unavailable"))
        .ok()
}
