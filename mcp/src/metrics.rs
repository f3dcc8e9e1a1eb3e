//! The proxy's own Prometheus series, beside the host's
//! (`hookwire_host_*`): messages by direction, kind and outcome, tool
//! calls by tool and outcome, their latency, and the sessions open. Every
//! label value comes from a fixed set; a tool name is one the upstream
//! listed at startup, any other is `other`, so a client cannot grow the
//! series. docs/mcp.md ("Metrics") lists them.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use hookwire_client::prometheus_client::metrics::counter::Counter;
use hookwire_client::prometheus_client::metrics::family::Family;
use hookwire_client::prometheus_client::metrics::gauge::Gauge;
use hookwire_client::prometheus_client::metrics::histogram::Histogram;
use hookwire_client::prometheus_client::registry::Registry;

type Label = (&'static str, Cow<'static, str>);

/// The most distinct tool names given their own series.
const MAX_TOOL_LABELS: usize = 256;

/// The proxy's metric families. Cheap to clone: clones share the series.
#[derive(Clone, Debug)]
pub struct McpMetrics {
    families: Arc<Families>,
}

#[derive(Debug)]
struct Families {
    messages: Family<[Label; 3], Counter>,
    calls: Family<[Label; 2], Counter>,
    duration: Family<[Label; 1], Histogram, fn() -> Histogram>,
    sessions: Gauge,
}

/// Tool calls, in the shared request-latency buckets (an approval may
/// take minutes).
fn call_histogram() -> Histogram {
    Histogram::new(hookwire::buckets::request_latency_buckets())
}

/// How a tool call ended, as the metrics label it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// Governed and answered with the upstream's (possibly rewritten)
    /// result.
    Allowed,
    /// Denied at `pre_tool_call`: never sent upstream.
    DeniedPre,
    /// Denied at `post_tool_call`: the result discarded.
    DeniedPost,
    /// A hidden tool called anyway.
    Hidden,
    /// The upstream failed, timed out or answered garbage.
    UpstreamFailed,
    /// Cancelled by the client.
    Cancelled,
    /// Parameters that are not a `tools/call`'s, or a host refusal.
    Refused,
}

impl CallOutcome {
    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::DeniedPre => "denied_pre",
            Self::DeniedPost => "denied_post",
            Self::Hidden => "hidden",
            Self::UpstreamFailed => "upstream_failed",
            Self::Cancelled => "cancelled",
            Self::Refused => "refused",
        }
    }
}

impl McpMetrics {
    /// Registers the families in `registry` under `hookwire_mcp_*`.
    pub fn register(registry: &mut Registry) -> Self {
        let f = Families {
            messages: Family::default(),
            calls: Family::default(),
            duration: Family::new_with_constructor(call_histogram),
            sessions: Gauge::default(),
        };
        registry.register(
            "hookwire_mcp_messages",
            "JSON-RPC messages received, by direction (client, upstream), kind (request, notification, response) and outcome (relayed, governed, refused, malformed, oversized)",
            f.messages.clone(),
        );
        registry.register(
            "hookwire_mcp_tool_calls",
            "tools/call requests, by tool (a name the upstream listed, else other) and outcome",
            f.calls.clone(),
        );
        registry.register(
            "hookwire_mcp_tool_call_seconds",
            "Time from a tools/call's arrival to its answer, by tool",
            f.duration.clone(),
        );
        registry.register(
            "hookwire_mcp_sessions_open",
            "MCP sessions open",
            f.sessions.clone(),
        );
        Self {
            families: Arc::new(f),
        }
    }

    /// Counts one message.
    pub fn message(&self, direction: &'static str, kind: &'static str, outcome: &'static str) {
        self.families
            .messages
            .get_or_create(&[
                ("direction", direction.into()),
                ("kind", kind.into()),
                ("outcome", outcome.into()),
            ])
            .inc();
    }

    /// Counts one tool call and its latency.
    pub fn tool_call(
        &self,
        tool: &str,
        known: &BTreeSet<String>,
        outcome: CallOutcome,
        took: Duration,
    ) {
        let name: Cow<'static, str> = if known.contains(tool) && known.len() <= MAX_TOOL_LABELS {
            tool.to_owned().into()
        } else {
            "other".into()
        };
        self.families
            .calls
            .get_or_create(&[("tool", name.clone()), ("outcome", outcome.as_str().into())])
            .inc();
        self.families
            .duration
            .get_or_create(&[("tool", name)])
            .observe(took.as_secs_f64());
    }

    /// One more session open (`+1`) or one fewer (`-1`).
    pub fn sessions(&self, delta: i64) {
        self.families.sessions.inc_by(delta);
    }
}
