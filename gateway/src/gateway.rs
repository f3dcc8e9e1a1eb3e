//! The [`Gateway`] handle: built from a [`Host`] and a
//! [`GatewayConfig`], it serves one route per wire API (each the core's
//! handler for that API's adapter; a query string, such as the Anthropic
//! SDKs' `?beta=true`, is accepted and not forwarded), the Messages
//! `count_tokens` answered locally, `GET /v1/models` relayed, the session
//! end route, and a fallback that answers every other route with a 404 in
//! the API's own error shape naming the routes it governs (logged at
//! `warn`, never forwarded); with [`GatewayConfig::hooks`], the hook
//! routes beside them (`crate::hooks`). It reaps idle conversations, and
//! on shutdown ends every open session (`agent_shutdown`, `cancelled`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use axum::Router;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use hookwire_client::Host;
use hookwire_hooks::HooksHost;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::api::{Api, chat::Chat, messages::Messages, responses::Responses};
use crate::applied::{Applied, AppliedLog};
use crate::callback::CallbackTokens;
use crate::config::GatewayConfig;
use crate::core::{self, Inner, Sessions};
use crate::count_tokens;
use crate::credentials::CredentialPool;
use crate::error::Error;
use crate::principal::Principal;
use crate::upstream::Upstream;

/// An OpenAI-compatible proxy governed by a hookwire host. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    /// The hook routes served beside the model routes
    /// ([`GatewayConfig::hooks`]).
    hook_routes: Option<Router>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstream", &self.inner.upstream.base())
            .field("credentials", &self.inner.pool.labels())
            .field("sessions", &self.inner.sessions.len())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway whose emissions go through `host`, forwarding to the
    /// configured upstream with keys from `pool` (empty: the client's own
    /// `Authorization` is forwarded).
    pub fn new(host: Host, config: GatewayConfig, pool: CredentialPool) -> Result<Self, Error> {
        config.check()?;
        if config.clients.is_some() && pool.is_empty() {
            return Err(Error::Config(
                "a clients file needs an upstream key pool: the client's token is its identity \
                 here and never goes upstream"
                    .into(),
            ));
        }
        let upstream = Upstream::new(
            &config.upstream,
            config.upstream_timeout,
            &config.upstream_tls,
        )?;
        let hook_routes = config
            .hooks
            .as_ref()
            .map(|h| h.routes(config.clients.clone()))
            .transpose()?;
        let callback_base = std::sync::OnceLock::new();
        if let Some(url) = &config.callback_base_url {
            let _ = callback_base.set(url.trim_end_matches('/').to_owned());
        }
        Ok(Self {
            inner: Arc::new(Inner {
                tokens: CallbackTokens::new(config.callback_ttl, config.callback_max_uses),
                callback_bindings: host.callback_bindings(),
                sessions: Sessions::new(
                    config.max_sessions,
                    config.max_sessions_per_credential,
                    config.idle_timeout,
                ),
                applied: AppliedLog::new(config.applied_capacity),
                flights: core::Flights::new(config.retry_window),
                host,
                config,
                upstream,
                pool,
                callback_base,
                next_request: AtomicU64::new(0),
            }),
            hook_routes,
        })
    }

    /// The routes: one `POST` per wire API (`/v1/chat/completions`,
    /// `/v1/responses`, `/v1/messages`), `POST /v1/messages/count_tokens`,
    /// `GET /v1/models`, `DELETE /v1/hookwire/sessions/{id}`, and the
    /// fallback for everything else. Every request, routed or not, goes
    /// through the access layer (`crate::access`): timed, counted, logged.
    pub fn router(&self) -> Router {
        let mut governed = Vec::new();
        let router = Router::new();
        let router = governs::<Chat>(router, &mut governed);
        let router = governs::<Responses>(router, &mut governed);
        let router = governs::<Messages>(router, &mut governed);
        // Answered here, never forwarded (see `crate::count_tokens`).
        governed.push(format!("POST {} (answered locally)", count_tokens::ROUTE));
        let router = router.route(
            count_tokens::ROUTE,
            post(count_tokens::serve).fallback(|method: Method| async move {
                only_post::<Messages>(&method, count_tokens::ROUTE)
            }),
        );
        governed.push("GET /v1/models".to_owned());
        governed.push("DELETE /v1/hookwire/sessions/{id}".to_owned());
        if self.hook_routes.is_some() {
            governed.push("POST /v1/hooks/{agent}".to_owned());
        }
        let governed = Arc::new(governed);
        let router = router
            .route(
                "/v1/models",
                get(
                    |State(g): State<Arc<Inner>>, headers: HeaderMap| async move {
                        g.models(headers).await
                    },
                ),
            )
            .route(
                "/v1/hookwire/sessions/{id}",
                delete(
                    |State(g): State<Arc<Inner>>,
                     Extension(p): Extension<Principal>,
                     Path(id): Path<String>| async move {
                        g.end_session(p.owner, id).await
                    },
                ),
            )
            .fallback(move |method: Method, uri: Uri| {
                let governed = governed.clone();
                async move { not_governed(&method, &uri, &governed) }
            })
            .with_state(self.inner.clone())
            .layer(axum::middleware::from_fn_with_state(
                self.inner.config.clients.clone(),
                crate::principal::authenticate,
            ));
        // The hook routes check their own token: the agents' hooks are no
        // clients of the model routes.
        let router = match &self.hook_routes {
            Some(hooks) => router.merge(hooks.clone()),
            None => router,
        };
        crate::access::layer(router, self.inner.config.metrics.clone())
    }

    /// What the gateway applied to each recent request.
    pub fn applied(&self) -> Vec<Applied> {
        self.inner.applied.entries()
    }

    /// How many conversations are open.
    pub fn open_sessions(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Shuts down every conversation idle past the timeout
    /// (`agent_shutdown`, `completed`); returns how many. The server runs
    /// this periodically.
    pub async fn reap_idle(&self) -> usize {
        self.inner.sessions.reap_idle().await
    }

    /// Shuts down every open conversation (`agent_shutdown`, `cancelled`).
    pub async fn close_all(&self) {
        self.inner.sessions.close_all().await;
    }

    /// Serves on `listener` until `shutdown` resolves, then ends every
    /// open session.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        if let Ok(addr) = listener.local_addr() {
            self.check_listen(addr)?;
            let _ = self.inner.callback_base.set(format!("http://{addr}/v1"));
        }
        let reaper = self.inner.sessions.table().spawn_reaper();
        let hooks = self.inner.config.hooks.as_ref().map(|h| h.host.clone());
        let hooks_reaper = hooks.as_ref().map(HooksHost::spawn_reaper);
        let served = axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(Error::Serve);
        reaper.abort();
        self.close_all().await;
        if let Some(hooks) = hooks {
            if let Some(r) = hooks_reaper {
                r.abort();
            }
            hooks.shutdown_all().await;
        }
        served
    }

    /// Refuses to serve the hook routes off loopback without a clients
    /// file: without one, an agent session is bound to the first key that
    /// joins it (`crate::hooks`), so only processes of this machine may
    /// try.
    fn check_listen(&self, addr: SocketAddr) -> Result<(), Error> {
        if self.hook_routes.is_some()
            && self.inner.config.clients.is_none()
            && !addr.ip().is_loopback()
        {
            return Err(Error::Config(format!(
                "the hook routes on {addr}, not loopback, need a clients file (--clients-file): \
                 without one, who may join an agent session is not authenticated"
            )));
        }
        Ok(())
    }

    /// Binds `addr` (port 0: any free port) and serves in the background.
    pub async fn spawn(self, addr: SocketAddr) -> Result<RunningGateway, Error> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        self.check_listen(addr)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(self.serve(listener, async {
            let _ = stopped.await;
        }));
        Ok(RunningGateway {
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

/// Adds API `A`'s route, and names it among the governed ones.
fn governs<A: Api>(router: Router<Arc<Inner>>, governed: &mut Vec<String>) -> Router<Arc<Inner>> {
    governed.push(format!("POST {}", A::ROUTE));
    router.route(
        A::ROUTE,
        post(core::serve::<A>)
            .fallback(|method: Method| async move { only_post::<A>(&method, A::ROUTE) }),
    )
}

/// The answer to another method on a `POST` route: a 405 in API `A`'s
/// error shape, nothing forwarded.
fn only_post<A: Api>(method: &Method, path: &str) -> Response {
    tracing::warn!(%method, path, "method not governed: answered 405, nothing forwarded");
    let e = Error::BadRequest(format!("{method} {path} is not governed; use POST"));
    (
        StatusCode::METHOD_NOT_ALLOWED,
        axum::Json(A::error_body(&e).1),
    )
        .into_response()
}

/// The answer to a route the gateway does not govern: a 404 in the
/// error shape of the API the path looks like (Anthropic's for
/// `/v1/messages…`, OpenAI's otherwise), naming the governed routes.
/// Nothing is forwarded.
fn not_governed(method: &Method, uri: &Uri, governed: &[String]) -> Response {
    let path = uri.path();
    tracing::warn!(%method, path, "route not governed by the gateway: answered 404, nothing forwarded");
    let message = format!(
        "{method} {path} is not a route this hookwire gateway governs; it governs: {}",
        governed.join(", ")
    );
    let body = if path.starts_with("/v1/messages") || path.starts_with("/messages") {
        json!({"type": "error", "error": {"type": "not_found_error", "message": message}})
    } else {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "route_not_governed"}})
    };
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

/// A gateway serving in the background; see [`Gateway::spawn`].
#[derive(Debug)]
pub struct RunningGateway {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), Error>>>,
}

impl RunningGateway {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL an OpenAI SDK takes, `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Stops serving, ends every session, and waits.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task
                .await
                .map_err(|e| Error::Serve(std::io::Error::other(e.to_string())))?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningGateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
