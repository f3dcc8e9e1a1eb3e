//! The gateway's own Prometheus series, beside the host's
//! (`hookwire_host_*`, [`hookwire_client::HostMetrics`]): requests by wire
//! API, route and status class, their latency, the requests in flight, and
//! the upstream's answers by status class.
//!
//! [`GatewayMetrics`] registers its families in a registry the caller owns
//! (the host's, so that one `/metrics` endpoint serves both) and is handed
//! to the gateway in [`GatewayConfig::metrics`](crate::GatewayConfig). Every
//! label value comes from a fixed set: the API names, the route templates
//! the router declares (never a raw path; `unmatched` for the rest), and
//! status classes. docs/gateway.md ("Metrics and logs") lists the series.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hookwire_client::prometheus_client::metrics::counter::Counter;
use hookwire_client::prometheus_client::metrics::family::Family;
use hookwire_client::prometheus_client::metrics::gauge::Gauge;
use hookwire_client::prometheus_client::metrics::histogram::Histogram;
use hookwire_client::prometheus_client::registry::Registry;

use crate::applied::Applied;

/// One label: a static name and a value from a fixed set.
type Label = (&'static str, Cow<'static, str>);

/// The gateway's metric families. Cheap to clone: clones share the series.
#[derive(Clone, Debug)]
pub struct GatewayMetrics {
    families: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    requests: Family<[Label; 3], Counter>,
    duration: Family<[Label; 2], Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    upstream: Family<[Label; 2], Counter>,
    retries_joined: Family<[Label; 1], Counter>,
}

/// Gateway requests, in the shared request-latency buckets (a streamed
/// answer's request lasts as long as the model writes).
fn request_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

impl GatewayMetrics {
    /// Registers the gateway families in `registry` under
    /// `hookwire_gateway_*`.
    pub fn register(registry: &mut Registry) -> Self {
        let f = Families {
            requests: Family::default(),
            duration: Family::new_with_constructor(request_histogram),
            in_flight: Gauge::default(),
            upstream: Family::default(),
            retries_joined: Family::default(),
        };
        registry.register(
            "hookwire_gateway_requests",
            "HTTP requests answered, by wire API, route template (\"unmatched\" when no route matched) and status class of the gateway's answer",
            f.requests.clone(),
        );
        registry.register(
            "hookwire_gateway_request_duration_seconds",
            "Time from a request's arrival to the end of its answer's body (a streamed answer included), by wire API and route template",
            f.duration.clone(),
        );
        registry.register(
            "hookwire_gateway_requests_in_flight",
            "HTTP requests arrived whose answer has not ended",
            f.in_flight.clone(),
        );
        registry.register(
            "hookwire_gateway_upstream_responses",
            "Requests forwarded upstream, by wire API and the upstream's status class (2xx, 3xx, 4xx, 5xx; error: no status, the upstream unreachable, timed out or unusable)",
            f.upstream.clone(),
        );
        registry.register(
            "hookwire_gateway_retries_joined",
            "Retried requests that joined the run they repeat instead of running again (the client timed out while the request was held, e.g. for an approval), by wire API",
            f.retries_joined.clone(),
        );
        Self {
            families: Arc::new(f),
        }
    }

    /// Counts a retried request of `api` that joined its run.
    pub(crate) fn retry_joined(&self, api: &'static str) {
        self.families
            .retries_joined
            .get_or_create(&[("api", Cow::Borrowed(api))])
            .inc();
    }

    /// Counts a request in flight until the returned guard drops.
    pub(crate) fn request_started(&self) -> InFlight {
        self.families.in_flight.inc();
        InFlight(self.families.in_flight.clone())
    }

    /// Counts one answered request of `api` on `route` and its latency.
    pub(crate) fn request_finished(
        &self,
        api: &'static str,
        route: &str,
        status: Option<u16>,
        took: Duration,
    ) {
        let route: Cow<'static, str> = Cow::Owned(route.to_owned());
        let class = status.map_or("none", status_class);
        self.families
            .requests
            .get_or_create(&[
                ("api", Cow::Borrowed(api)),
                ("route", route.clone()),
                ("status", Cow::Borrowed(class)),
            ])
            .inc();
        self.families
            .duration
            .get_or_create(&[("api", Cow::Borrowed(api)), ("route", route)])
            .observe(took.as_secs_f64());
    }

    /// Counts the upstream's answer to one request of `api`, when the
    /// entry says it was forwarded.
    pub(crate) fn upstream_answered(&self, api: &'static str, applied: &Applied) {
        if let Some(class) = upstream_class(applied) {
            self.families
                .upstream
                .get_or_create(&[("api", Cow::Borrowed(api)), ("class", Cow::Borrowed(class))])
                .inc();
        }
    }
}

/// A request counted in flight until dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The class label of an HTTP status: `2xx`, `4xx`, ….
pub(crate) fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        5 => "5xx",
        _ => "other",
    }
}

/// The upstream status class of an [`Applied`] entry: the class of the
/// status the upstream answered with; `error` when it gave none and the
/// request failed with 502 (the gateway's status for an upstream it could
/// not reach, that timed out, or whose answer it could not use); nothing
/// when the request never went upstream (denied, refused, bad request).
pub(crate) fn upstream_class(applied: &Applied) -> Option<&'static str> {
    match applied.upstream_status {
        Some(status) => Some(status_class(status)),
        None if applied.outcome.ends_with(":502") => Some("error"),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(upstream_status: Option<u16>, outcome: &str) -> Applied {
        Applied {
            upstream_status,
            outcome: outcome.into(),
            ..Applied::default()
        }
    }

    #[test]
    fn statuses_fold_into_their_class() {
        assert_eq!(status_class(200), "2xx");
        assert_eq!(status_class(204), "2xx");
        assert_eq!(status_class(302), "3xx");
        assert_eq!(status_class(429), "4xx");
        assert_eq!(status_class(503), "5xx");
        assert_eq!(status_class(101), "1xx");
        assert_eq!(status_class(600), "other");
    }

    #[test]
    fn the_upstream_class_is_its_status_or_an_error_when_it_never_answered() {
        assert_eq!(upstream_class(&entry(Some(200), "forwarded")), Some("2xx"));
        assert_eq!(
            upstream_class(&entry(Some(500), "upstream_error:500")),
            Some("5xx")
        );
        assert_eq!(
            upstream_class(&entry(Some(429), "upstream_error:429")),
            Some("4xx")
        );
        // A stream that broke off after a 200 was still answered 200.
        assert_eq!(upstream_class(&entry(Some(200), "failed:502")), Some("2xx"));
        assert_eq!(upstream_class(&entry(None, "failed:502")), Some("error"));
        assert_eq!(upstream_class(&entry(None, "denied:input")), None);
        assert_eq!(upstream_class(&entry(None, "failed:400")), None);
        assert_eq!(upstream_class(&entry(None, "failed:403")), None);
    }

    #[test]
    fn a_finished_request_is_counted_under_its_route_and_class() {
        use hookwire_client::prometheus_client::encoding::text::encode;
        let mut registry = Registry::default();
        let metrics = GatewayMetrics::register(&mut registry);
        let guard = metrics.request_started();
        metrics.request_finished(
            "chat_completions",
            "/v1/chat/completions",
            Some(200),
            Duration::from_millis(3),
        );
        metrics.request_finished("other", "unmatched", Some(404), Duration::ZERO);
        metrics.upstream_answered("chat_completions", &entry(None, "failed:502"));
        metrics.upstream_answered("chat_completions", &entry(None, "denied:input"));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("hookwire_gateway_requests_in_flight 1\n"),
            "{text}"
        );
        drop(guard);
        let mut after = String::new();
        encode(&mut after, &registry).unwrap();
        assert!(
            after.contains("hookwire_gateway_requests_in_flight 0\n"),
            "{after}"
        );
        for line in [
            r#"hookwire_gateway_requests_total{api="chat_completions",route="/v1/chat/completions",status="2xx"} 1"#,
            r#"hookwire_gateway_requests_total{api="other",route="unmatched",status="4xx"} 1"#,
            r#"hookwire_gateway_request_duration_seconds_count{api="chat_completions",route="/v1/chat/completions"} 1"#,
            r#"hookwire_gateway_upstream_responses_total{api="chat_completions",class="error"} 1"#,
        ] {
            assert!(after.contains(line), "{line} missing:\n{after}");
        }
        assert_eq!(
            after
                .matches("hookwire_gateway_upstream_responses_total{")
                .count(),
            1,
            "a denied request never went upstream:\n{after}"
        );
    }
}
