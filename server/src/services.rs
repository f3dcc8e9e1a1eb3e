//! The gRPC services one interceptor server mounts (the interceptor,
//! health, reflection), routed by the service name of each request's
//! path: `/{package.Service}/{Method}`.
//!
//! tonic's own router (its `router` feature) is an axum router; routing
//! four fixed names needs no web framework, so the SDK routes them here
//! and interceptor authors do not compile axum.

use std::convert::Infallible;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tower::ServiceExt as _;
use tower::util::BoxCloneSyncService;

type Route = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// The services a [`Router`](crate::Router) serves, by gRPC service name:
/// what the tower layers of [`Server::layer`](crate::Server::layer) wrap.
/// A request for any other service is answered `UNIMPLEMENTED`, as tonic
/// does.
#[derive(Clone, Default)]
pub struct Services {
    routes: Vec<(&'static str, Route)>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.routes.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Services {
    /// Adds `service` under its gRPC name.
    pub(crate) fn with<S>(mut self, service: S) -> Self
    where
        S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes
            .push((S::NAME, BoxCloneSyncService::new(service)));
        self
    }

    /// Adds `service` when there is one.
    pub(crate) fn with_optional<S>(self, service: Option<S>) -> Self
    where
        S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        match service {
            Some(service) => self.with(service),
            None => self,
        }
    }
}

/// The service name of a gRPC path, `/{name}/{method}`.
fn service_name(path: &str) -> Option<&str> {
    let (name, method) = path.strip_prefix('/')?.split_once('/')?;
    (!name.is_empty() && !method.is_empty()).then_some(name)
}

impl Service<Request<Body>> for Services {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Response<Body>, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each route is made ready when a request is routed to it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let name = service_name(request.uri().path());
        let route = self
            .routes
            .iter()
            .find(|(n, _)| Some(*n) == name)
            .map(|(_, route)| route.clone());
        match route {
            Some(route) => Box::pin(route.oneshot(request)),
            None => Box::pin(async { Ok(tonic::Status::unimplemented("").into_http()) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::service_name;

    #[test]
    fn the_service_name_is_the_first_path_segment() {
        assert_eq!(
            service_name("/hookwire.v1.Interceptor/PreToolCall"),
            Some("hookwire.v1.Interceptor")
        );
        assert_eq!(
            service_name("/grpc.health.v1.Health/Check"),
            Some("grpc.health.v1.Health")
        );
        assert_eq!(service_name("/hookwire.v1.Interceptor"), None);
        assert_eq!(service_name("/hookwire.v1.Interceptor/"), None);
        assert_eq!(service_name("//Check"), None);
        assert_eq!(service_name("no-slash/Check"), None);
    }
}
