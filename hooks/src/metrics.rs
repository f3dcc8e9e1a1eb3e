//! The hooks daemon's own Prometheus series, beside the host's
//! (`hookwire_host_*`, [`hookwire_client::HostMetrics`]): hook calls
//! answered by agent, event and outcome, their latency, the agent
//! sessions open, the callers refused, and the answers that failed
//! closed, by cause.
//!
//! [`HooksMetrics`] registers its families in a registry the caller owns
//! (the host's, so that one `/metrics` endpoint serves both) and is handed
//! to [`HooksHost::with_metrics`](crate::HooksHost::with_metrics). Every
//! label value comes from a fixed set: the agents' names, the event names
//! their adapters accept (anything else is `other`), the outcome kinds
//! and the causes below. docs/hooks.md ("Metrics") lists the series.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hookwire_client::prometheus_client::metrics::counter::Counter;
use hookwire_client::prometheus_client::metrics::family::Family;
use hookwire_client::prometheus_client::metrics::gauge::Gauge;
use hookwire_client::prometheus_client::metrics::histogram::Histogram;
use hookwire_client::prometheus_client::registry::Registry;

use crate::agents::Agent;
use crate::error::Error;
use crate::event::Outcome;

/// One label: a static name and a value from a fixed set.
type Label = (&'static str, Cow<'static, str>);

/// The longest event name used as a label value; a longer one is `other`.
const MAX_EVENT_LABEL: usize = 40;

/// The daemon's metric families. Cheap to clone: clones share the series.
#[derive(Clone, Debug)]
pub struct HooksMetrics {
    families: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    decisions: Family<[Label; 3], Counter>,
    duration: Family<[Label; 2], Histogram, fn() -> Histogram>,
    sessions: Family<[Label; 1], Gauge>,
    refused: Family<[Label; 2], Counter>,
    failed_closed: Family<[Label; 2], Counter>,
}

/// Hook decisions, in the shared request-latency buckets (a call waiting
/// for a reviewer lasts as long as the reviewer takes).
fn decision_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

impl HooksMetrics {
    /// Registers the daemon's families in `registry` under
    /// `hookwire_hooks_*`.
    pub fn register(registry: &mut Registry) -> Self {
        let f = Families {
            decisions: Family::default(),
            duration: Family::new_with_constructor(decision_histogram),
            sessions: Family::default(),
            refused: Family::default(),
            failed_closed: Family::default(),
        };
        registry.register(
            "hookwire_hooks_decisions",
            "Hook calls answered, by agent, the agent's event name (\"other\" when unreadable) and the outcome the agent was given (proceed, rewrite, block, ask, stop)",
            f.decisions.clone(),
        );
        registry.register(
            "hookwire_hooks_decision_duration_seconds",
            "Time from a hook call's arrival to its answer, by agent and event",
            f.duration.clone(),
        );
        registry.register(
            "hookwire_hooks_sessions_open",
            "Agent sessions open in the daemon's table, by agent",
            f.sessions.clone(),
        );
        registry.register(
            "hookwire_hooks_refused_callers",
            "Hook callers refused before their payload was read, by agent (\"unknown\" when not yet known) and reason (token: no valid bearer token, answered 401; peer: a Unix socket peer that is not the socket's owner, disconnected)",
            f.refused.clone(),
        );
        registry.register(
            "hookwire_hooks_failed_closed",
            "Hook calls answered with a block or stop because they could not be governed, by agent and cause (payload, too_large, overloaded, host_error, other)",
            f.failed_closed.clone(),
        );
        Self {
            families: Arc::new(f),
        }
    }

    /// Counts one answered hook call of `agent` at `event` and its latency.
    pub(crate) fn answered(&self, agent: Agent, event: &str, outcome: &Outcome, took: Duration) {
        let agent_label = Cow::Borrowed(agent.name());
        let event_label = event_label(event);
        self.families
            .decisions
            .get_or_create(&[
                ("agent", agent_label.clone()),
                ("event", event_label.clone()),
                ("outcome", Cow::Borrowed(outcome_label(outcome))),
            ])
            .inc();
        self.families
            .duration
            .get_or_create(&[("agent", agent_label), ("event", event_label)])
            .observe(took.as_secs_f64());
    }

    /// Counts a caller refused for `reason` (`token`, `peer`).
    pub(crate) fn refused(&self, agent: Option<Agent>, reason: &'static str) {
        let agent = agent.map_or("unknown", Agent::name);
        self.families
            .refused
            .get_or_create(&[
                ("agent", Cow::Borrowed(agent)),
                ("reason", Cow::Borrowed(reason)),
            ])
            .inc();
    }

    /// Counts a hook call of `agent` that failed closed on `error`.
    pub(crate) fn failed_closed(&self, agent: Agent, error: &Error) {
        self.families
            .failed_closed
            .get_or_create(&[
                ("agent", Cow::Borrowed(agent.name())),
                ("cause", Cow::Borrowed(cause_label(error))),
            ])
            .inc();
    }

    /// Moves the open-session gauge of `agent` by `delta`.
    pub(crate) fn sessions_moved(&self, agent: Agent, delta: i64) {
        self.families
            .sessions
            .get_or_create(&[("agent", Cow::Borrowed(agent.name()))])
            .inc_by(delta);
    }
}

/// The event label: the adapters accept a fixed set of event names, so
/// a name is kept when it looks like one (ASCII letters, bounded), else
/// it is `other`.
fn event_label(event: &str) -> Cow<'static, str> {
    let plain = !event.is_empty()
        && event.len() <= MAX_EVENT_LABEL
        && event.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        Cow::Owned(event.to_owned())
    } else {
        Cow::Borrowed("other")
    }
}

/// The outcome label of an answer.
pub(crate) fn outcome_label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Proceed => "proceed",
        Outcome::Rewrite(_) => "rewrite",
        Outcome::Block { .. } => "block",
        Outcome::Ask { .. } => "ask",
        Outcome::Stop { .. } => "stop",
    }
}

/// The cause label of a failure.
fn cause_label(error: &Error) -> &'static str {
    match error {
        Error::Payload { .. } | Error::UnknownAgent(_) => "payload",
        Error::PayloadTooLarge(_) => "too_large",
        Error::Overloaded(_) => "overloaded",
        Error::NotOwner => "not_owner",
        Error::Host(_) => "host_error",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookwire_client::prometheus_client::encoding::text::encode;

    #[test]
    fn every_series_counts_under_fixed_labels() {
        let mut registry = Registry::default();
        let m = HooksMetrics::register(&mut registry);
        m.answered(
            Agent::ClaudeCode,
            "PreToolUse",
            &Outcome::Proceed,
            Duration::from_micros(300),
        );
        m.answered(
            Agent::Codex,
            "weird event\n{x=\"1\"}",
            &Outcome::Stop { reason: "r".into() },
            Duration::ZERO,
        );
        m.refused(Some(Agent::ClaudeCode), "token");
        m.refused(None, "peer");
        m.failed_closed(Agent::Codex, &Error::PayloadTooLarge(1));
        m.failed_closed(Agent::Codex, &Error::Overloaded(1));
        m.sessions_moved(Agent::GeminiCli, 2);
        m.sessions_moved(Agent::GeminiCli, -1);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            r#"hookwire_hooks_decisions_total{agent="claude-code",event="PreToolUse",outcome="proceed"} 1"#,
            r#"hookwire_hooks_decisions_total{agent="codex",event="other",outcome="stop"} 1"#,
            r#"hookwire_hooks_decision_duration_seconds_count{agent="claude-code",event="PreToolUse"} 1"#,
            r#"hookwire_hooks_refused_callers_total{agent="claude-code",reason="token"} 1"#,
            r#"hookwire_hooks_refused_callers_total{agent="unknown",reason="peer"} 1"#,
            r#"hookwire_hooks_failed_closed_total{agent="codex",cause="too_large"} 1"#,
            r#"hookwire_hooks_failed_closed_total{agent="codex",cause="overloaded"} 1"#,
            r#"hookwire_hooks_sessions_open{agent="gemini-cli"} 1"#,
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
        assert!(!text.contains("weird"), "{text}");
    }
}
