//! The access layer: every HTTP request the gateway answers, whatever its
//! route (the fallback and unmatched paths included), is timed, counted in
//! [`GatewayMetrics`] when the gateway has them, and logged as one line
//! (`tracing` target `hookwire_gateway::access`, INFO): method, route
//! template, wire API, status, latency, and — when the request produced an
//! [`Applied`] entry — its session, request id, upstream status and
//! outcome, and the listed client it acted for. Never a payload, a
//! header value, a key or a query string.
//!
//! The layer runs the request inside a task-local scope holding the
//! request's [`Exchange`] (as the `crate::applied::RequestFacts` an entry
//! reports to); an `Applied` built there (`Applied::default()`)
//! takes a link to it, so the entry's facts reach the line even when it is
//! pushed after the handler returned (at the end of a mediated stream, from
//! the task writing it). The line is written when the last holder lets go:
//! the answer's body once it ended (or the client left), and the entry once
//! pushed.

use crate::api::{Api, chat::Chat, messages::Messages, responses::Responses};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use hyper::body::{Body as _, Frame, SizeHint};

use crate::applied::{Applied, CURRENT_REQUEST, RequestFacts};
use crate::metrics::{GatewayMetrics, InFlight};

/// The route label of a request no route matched.
pub(crate) const UNMATCHED: &str = "unmatched";

/// How much of an unmatched path the line shows.
const MAX_LOGGED_PATH: usize = 128;

/// Wraps every route of `router` (and its fallback) in the access layer.
/// Call it last: a route or fallback added after it is not seen.
pub(crate) fn layer(router: Router, metrics: Option<GatewayMetrics>) -> Router {
    router.layer(axum::middleware::from_fn_with_state(metrics, access))
}

/// The wire API a route template (or, unmatched, a path) belongs to: the
/// adapters' names (`chat_completions`, `responses`, `messages`), `models`,
/// the gateway's own `hookwire` routes, else `other`.
pub(crate) fn api_of(path: &str) -> &'static str {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    if under(Chat::ROUTE) {
        Chat::NAME
    } else if under(Responses::ROUTE) {
        Responses::NAME
    } else if under(Messages::ROUTE) {
        Messages::NAME
    } else if under("/v1/models") {
        "models"
    } else if under("/v1/hookwire") {
        "hookwire"
    } else {
        "other"
    }
}

/// One request as the layer follows it; the line is written on drop.
pub(crate) struct Exchange {
    started: Instant,
    method: String,
    route: String,
    api: &'static str,
    /// The path without its query, bounded, for an unmatched request only.
    unmatched_path: Option<String>,
    metrics: Option<GatewayMetrics>,
    facts: Mutex<Facts>,
}

/// What is learnt about an exchange as it goes.
#[derive(Default)]
struct Facts {
    status: Option<u16>,
    took: Option<Duration>,
    /// Whether the answer's body ended (false: the client left first).
    completed: bool,
    applied: Option<AppliedFacts>,
    /// The listed client the request acts for (with a clients file).
    client: Option<String>,
}

/// The facts of the request's [`Applied`] entry the line carries.
struct AppliedFacts {
    session: String,
    request_id: String,
    upstream_status: Option<u16>,
    outcome: String,
}

impl Exchange {
    fn facts(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let facts = std::mem::take(&mut *self.facts.lock().unwrap_or_else(PoisonError::into_inner));
        let took = facts.took.unwrap_or_else(|| self.started.elapsed());
        let applied = facts.applied.as_ref();
        tracing::info!(
            target: "hookwire_gateway::access",
            method = %self.method,
            route = %self.route,
            api = self.api,
            path = self.unmatched_path.as_deref(),
            status = facts.status,
            latency_ms = %format_args!("{:.3}", took.as_secs_f64() * 1e3),
            completed = facts.completed,
            client = facts.client.as_deref(),
            session = applied.map(|a| a.session.as_str()).filter(|s| !s.is_empty()),
            request_id = applied.map(|a| a.request_id.as_str()),
            upstream_status = applied.and_then(|a| a.upstream_status),
            outcome = applied.map(|a| a.outcome.as_str()),
            "request"
        );
    }
}

impl RequestFacts for Exchange {
    /// Hands `entry`'s facts to this request's line (counting the
    /// upstream's answer).
    fn pushed(&self, entry: &Applied) {
        if let Some(metrics) = &self.metrics {
            metrics.upstream_answered(self.api, entry);
        }
        self.facts().applied = Some(AppliedFacts {
            session: entry.session.clone(),
            request_id: entry.request_id.clone(),
            upstream_status: entry.upstream_status,
            outcome: entry.outcome.clone(),
        });
    }

    fn client(&self, name: &str) {
        self.facts().client = Some(name.to_owned());
    }
}

/// The middleware: opens the exchange, runs the route in its scope, and
/// follows the answer's body to its end.
async fn access(
    State(metrics): State<Option<GatewayMetrics>>,
    request: Request,
    next: Next,
) -> Response {
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let path = request.uri().path();
    let api = api_of(matched.as_deref().unwrap_or(path));
    let unmatched_path = matched
        .is_none()
        .then(|| path.chars().take(MAX_LOGGED_PATH).collect());
    let exchange = Arc::new(Exchange {
        started: Instant::now(),
        method: request.method().as_str().chars().take(16).collect(),
        route: matched.unwrap_or_else(|| UNMATCHED.to_owned()),
        api,
        unmatched_path,
        metrics: metrics.clone(),
        facts: Mutex::default(),
    });
    let in_flight = metrics.as_ref().map(GatewayMetrics::request_started);
    let current: Arc<dyn RequestFacts> = exchange.clone();
    let response = CURRENT_REQUEST.scope(current, next.run(request)).await;
    exchange.facts().status = Some(response.status().as_u16());
    let (parts, body) = response.into_parts();
    let end = End {
        exchange,
        _in_flight: in_flight,
    };
    if body.is_end_stream() {
        // Nothing to follow (a 204, axum's 404): counted before it is sent.
        end.finish(true);
        return Response::from_parts(parts, body);
    }
    let body = Followed {
        body,
        end: Some(end),
    };
    Response::from_parts(parts, Body::new(body))
}

/// What ends with the answer's body.
struct End {
    exchange: Arc<Exchange>,
    _in_flight: Option<InFlight>,
}

impl End {
    /// Counts the request, noting whether its body `completed`.
    fn finish(self, completed: bool) {
        let x = &self.exchange;
        let took = x.started.elapsed();
        let status = {
            let mut facts = x.facts();
            facts.took = Some(took);
            facts.completed = completed;
            facts.status
        };
        if let Some(metrics) = &x.metrics {
            metrics.request_finished(x.api, &x.route, status, took);
        }
    }
}

/// An answer's body, followed to its end (or its drop).
struct Followed {
    body: Body,
    end: Option<End>,
}

impl hyper::body::Body for Followed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => {
                if let Some(end) = self.end.take() {
                    end.finish(true);
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(end) = self.end.take() {
                    end.finish(false);
                }
            }
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => {
                if let Some(end) = self.end.take() {
                    end.finish(true);
                }
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        if let Some(end) = self.end.take() {
            // A body empty from the start may never be polled.
            end.finish(self.body.is_end_stream());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(metrics: Option<GatewayMetrics>) -> Arc<Exchange> {
        Arc::new(Exchange {
            started: Instant::now(),
            method: "POST".into(),
            route: "/v1/chat/completions".into(),
            api: "chat_completions",
            unmatched_path: None,
            metrics,
            facts: Mutex::default(),
        })
    }

    #[test]
    fn routes_and_paths_map_to_a_fixed_set_of_apis() {
        assert_eq!(api_of("/v1/chat/completions"), "chat_completions");
        assert_eq!(api_of("/v1/responses"), "responses");
        assert_eq!(api_of("/v1/responses/{id}"), "responses");
        assert_eq!(api_of("/v1/messages"), "messages");
        assert_eq!(api_of("/v1/messages/count_tokens"), "messages");
        assert_eq!(api_of("/v1/models"), "models");
        assert_eq!(api_of("/v1/hookwire/sessions/{id}"), "hookwire");
        assert_eq!(api_of("/v1/messagesx"), "other");
        assert_eq!(api_of("/v2/chat/completions"), "other");
        assert_eq!(api_of(""), "other");
    }

    #[tokio::test]
    async fn an_entry_built_for_a_request_reaches_it_even_when_pushed_from_another_task() {
        let x = exchange(None);
        let current: Arc<dyn RequestFacts> = x.clone();
        let entry = CURRENT_REQUEST
            .scope(current, async {
                Applied {
                    session: "s-1".into(),
                    request_id: "gw-7".into(),
                    ..Applied::default()
                }
            })
            .await;
        assert!(entry.link.is_linked(), "linked inside the scope");
        assert!(!entry.clone().link.is_linked(), "a clone is not linked");
        assert_eq!(Arc::strong_count(&x), 2);
        let log = crate::applied::AppliedLog::new(4);
        tokio::spawn(async move {
            let mut entry = entry;
            entry.upstream_status = Some(200);
            entry.outcome = "forwarded".into();
            log.push(entry);
            assert!(!log.entries()[0].link.is_linked(), "the log keeps no link");
        })
        .await
        .unwrap();
        assert_eq!(Arc::strong_count(&x), 1, "the entry let go once pushed");
        let facts = x.facts();
        let applied = facts.applied.as_ref().expect("the entry's facts");
        assert_eq!(applied.session, "s-1");
        assert_eq!(applied.request_id, "gw-7");
        assert_eq!(applied.upstream_status, Some(200));
        assert_eq!(applied.outcome, "forwarded");
    }

    #[test]
    fn an_entry_built_outside_a_request_is_not_linked() {
        assert!(!Applied::default().link.is_linked());
    }

    #[test]
    fn a_body_followed_to_its_end_counts_the_request_once() {
        use hookwire_client::prometheus_client::encoding::text::encode;
        let mut registry = hookwire_client::prometheus_client::registry::Registry::default();
        let metrics = GatewayMetrics::register(&mut registry);
        let x = exchange(Some(metrics.clone()));
        x.facts().status = Some(200);
        let followed = Followed {
            body: Body::from("{}"),
            end: Some(End {
                exchange: x.clone(),
                _in_flight: Some(metrics.request_started()),
            }),
        };
        let collected = futures::executor::block_on(http_body_util::BodyExt::collect(followed));
        assert_eq!(collected.unwrap().to_bytes(), Bytes::from("{}"));
        assert!(x.facts().completed);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(r#"hookwire_gateway_requests_total{api="chat_completions",route="/v1/chat/completions",status="2xx"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("hookwire_gateway_requests_in_flight 0\n"),
            "{text}"
        );
    }

    #[test]
    fn a_body_dropped_before_its_end_is_counted_as_not_completed() {
        let x = exchange(None);
        let followed = Followed {
            body: Body::from("unread"),
            end: Some(End {
                exchange: x.clone(),
                _in_flight: None,
            }),
        };
        drop(followed);
        let facts = x.facts();
        assert!(!facts.completed);
        assert!(facts.took.is_some());
    }
}
