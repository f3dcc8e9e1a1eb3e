//! The `audit` section: what signing every record costs a remote emission.
//! The same remote interceptor, with and without a `hookwire-audit` signing
//! sink on the host, alternating in rounds. The sink is measured as an
//! agent would deploy it by default (background writer, sync every 64
//! lines, checkpoint kept), and once signing inline on the emission path.

use hookwire::Composition;
use hookwire_audit::{AuditKey, Delivery, SigningSink, SinkOptions};
use hookwire_client::{Host, InterceptorBinding, ToolCall};

use crate::measure::{Emit, interleaved};
use crate::report::Headline;
use crate::{Plan, REMOTE_TIMEOUT, fixtures, started};

/// A one-interceptor remote host, with `sink` when given.
fn host(endpoint: &str, sink: Option<SigningSink>) -> Host {
    let mut b = Host::builder(fixtures::AGENT, fixtures::FRAMEWORK)
        .composition(Composition::default())
        .bind(InterceptorBinding::remote("r0", endpoint).timeout(REMOTE_TIMEOUT));
    if let Some(sink) = sink {
        b = b.record_sink(sink);
    }
    b.build().expect("host builds")
}

/// Remote emission with the signing sink vs without (target ≤ 1.1×).
pub async fn section(plan: Plan, endpoint: &str, call: &ToolCall, headline: &mut Vec<Headline>) {
    eprintln!("signed records vs none ...");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let plain = host(endpoint, None);
    let mut without = Emit {
        session: started(&plain, "s-plain").await,
        call: call.clone(),
    };
    for (label, delivery, target) in [
        ("background writer", Delivery::default(), Some((1.1, false))),
        ("signed inline", Delivery::Inline, None),
    ] {
        let key = AuditKey::generate().expect("a key");
        let path = dir
            .path()
            .join(format!("{}.jsonl", label.replace(' ', "-")));
        let sink = SigningSink::open(&path, key, SinkOptions::default().delivery(delivery))
            .expect("the log opens");
        let signed = host(endpoint, Some(sink.clone()));
        let mut with = Emit {
            session: started(&signed, "s-signed").await,
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
        let status = sink.sync().expect("every record written");
        assert!(status.is_healthy() && status.lines > 0, "{status:?}");
        headline.push(Headline::latency(
            format!("remote emission with signed, hash-chained records ({label}) vs without"),
            &a,
            &b,
            "",
            target,
        ));
    }
}
