//! The `metrics` section: what the host's Prometheus metrics cost a remote
//! emission. Two hosts bound to the same allow service, one counting in a
//! registry (never scraped) and one without metrics, alternate in rounds;
//! the ratio of their medians is `metrics_overhead` (target ≤ 1.05).

use hookwire::Profile;
use hookwire_client::prometheus_client::registry::Registry;
use hookwire_client::{Host, HostMetrics, InterceptorBinding, ToolCall};

use crate::child::Endpoints;
use crate::measure::{Emit, interleaved};
use crate::report::Headline;
use crate::{Plan, REMOTE_TIMEOUT, fixtures, started};

/// The remote emission with metrics against the same emission without.
pub async fn overhead(plan: Plan, ep: &Endpoints, call: &ToolCall, headline: &mut Vec<Headline>) {
    eprintln!("metrics overhead ...");
    let mut registry = Registry::default();
    let counted = Host::builder(fixtures::AGENT, fixtures::FRAMEWORK)
        .composition(hookwire::Composition::new(Profile::SequentialFirstDeny))
        .metrics(HostMetrics::register(&mut registry))
        .bind(InterceptorBinding::remote("r0", &ep.allow).timeout(REMOTE_TIMEOUT))
        .build()
        .expect("host builds");
    let bare = fixtures::remote_host(&ep.allow, 1, Profile::SequentialFirstDeny, REMOTE_TIMEOUT);
    let mut with = Emit {
        session: started(&counted, "s-metrics").await,
        call: call.clone(),
    };
    let mut without = Emit {
        session: started(&bare, "s-no-metrics").await,
        call: call.clone(),
    };
    let (a, b) = interleaved(
        &mut with,
        &mut without,
        300,
        plan.rounds,
        plan.remote_per_round,
    )
    .await;
    headline.push(Headline::latency(
        "remote emission with host metrics vs without (no scrape)".to_owned(),
        &a,
        &b,
        "metrics_overhead",
        Some((1.05, false)),
    ));
}
