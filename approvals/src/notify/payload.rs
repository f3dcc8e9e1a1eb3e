//! What a notification says: a [`Notice`], the summary of one request
//! (never its arguments, context or approval block), and the three bodies
//! built from it: the generic webhook's JSON, a Slack incoming-webhook
//! message and a Microsoft Teams Adaptive Card message. Every string is
//! cut to a bound, and every body links to the page, which still
//! requires sign-in: a notification grants nothing.

use hookwire::approval::ApprovalOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::events::PendingApproval;

/// Longest text kept of any one field of a notice.
pub const MAX_NOTICE_FIELD: usize = 200;

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    /// A new request waits for a decision.
    Requested,
    /// A request was decided.
    Decided,
    /// A request's deadline passed without a decision.
    Expired,
    /// Its host withdrew a request before a decision (the agent gave up
    /// waiting, its stream to the service ended, or the service failed
    /// it): deciding it is no longer possible.
    Withdrawn,
}

impl NotifyKind {
    /// Every kind, the default of a channel's `events`.
    pub const ALL: [Self; 4] = [
        Self::Requested,
        Self::Decided,
        Self::Expired,
        Self::Withdrawn,
    ];

    /// The `event` member of the generic body: `approval.requested`, ...
    pub const fn event(self) -> &'static str {
        match self {
            Self::Requested => "approval.requested",
            Self::Decided => "approval.decided",
            Self::Expired => "approval.expired",
            Self::Withdrawn => "approval.withdrawn",
        }
    }

    /// A short lowercase name: `requested`, `decided`, `expired`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "requested",
            Self::Decided => "decided",
            Self::Expired => "expired",
            Self::Withdrawn => "withdrawn",
        }
    }
}

/// The summary of one request a notification carries: who asked, where,
/// why, and a link to the page. No arguments, context or approval block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// The queue's id.
    pub id: String,
    /// `interception_point`.
    pub point: String,
    /// `tool_call.name`, at the tool points.
    pub tool: Option<String>,
    /// `agent.id`.
    pub agent: Option<String>,
    /// `tenant.id`, when the context has a tenant.
    pub tenant: Option<String>,
    /// `session.id`.
    pub session: String,
    /// The host that asked.
    pub host: String,
    /// The liftable deny's reason.
    pub reason: Option<String>,
    /// The liftable deny's message.
    pub message: Option<String>,
    /// Milliseconds left when the request arrived.
    pub expires_in_ms: u64,
    /// Why its host withdrew it, in a `withdrawn` notification:
    /// `cancelled` (the agent stopped waiting), `host_gone` (its stream
    /// ended) or `failed` (the service gave up on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<String>,
}

fn cut(s: &str) -> String {
    s.chars().take(MAX_NOTICE_FIELD).collect()
}

impl Notice {
    /// The summary of `p`.
    pub fn of(p: &PendingApproval) -> Self {
        let ctx = &p.request.context;
        let id_of = |member: &str| {
            ctx.get(member)
                .and_then(|v| v.get("id"))
                .and_then(Value::as_str)
                .map(cut)
        };
        Self {
            id: cut(&p.id),
            point: p.request.interception_point.to_string(),
            tool: p.tool_name().map(cut),
            agent: id_of("agent"),
            tenant: id_of("tenant"),
            session: cut(p.session_id()),
            host: cut(&p.host),
            reason: p.request.verdict.reason.as_deref().map(cut),
            message: p.request.verdict.message.as_deref().map(cut),
            expires_in_ms: u64::try_from(p.remaining().as_millis()).unwrap_or(u64::MAX),
            withdrawn: None,
        }
    }

    /// The page's address for this request: `page_url` with the request
    /// selected (`#request=ID`).
    pub fn link(&self, page_url: &str) -> String {
        let id: String = self
            .id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        format!("{}#request={id}", page_url.split('#').next().unwrap_or(""))
    }

    fn headline(&self, kind: NotifyKind, decision: Option<&Decision>) -> String {
        let what = self.tool.as_deref().unwrap_or(self.point.as_str());
        let agent = self.agent.as_deref().unwrap_or(self.host.as_str());
        match (kind, decision) {
            (NotifyKind::Decided, Some(d)) => {
                format!("{what} for {agent} was {} by {}", d.verb(), d.approver)
            }
            (NotifyKind::Expired, _) => format!("{what} for {agent} expired undecided"),
            (NotifyKind::Withdrawn, _) => format!(
                "{what} for {agent} was withdrawn undecided ({})",
                self.withdrawn.as_deref().unwrap_or("cancelled")
            ),
            _ => format!("Approval waiting: {what} for {agent}"),
        }
    }
}

/// Who decided and how, for a `decided` notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The approver's verified name.
    pub approver: String,
    /// The outcome, as sent.
    pub outcome: Option<ApprovalOutcome>,
}

impl Decision {
    fn outcome_name(&self) -> &'static str {
        match self.outcome {
            Some(ApprovalOutcome::Approve) => "approve",
            Some(ApprovalOutcome::Reject) => "reject",
            Some(ApprovalOutcome::Unresolved) => "unresolved",
            None => "none",
        }
    }

    fn verb(&self) -> &'static str {
        match self.outcome {
            Some(ApprovalOutcome::Approve) => "approved",
            Some(ApprovalOutcome::Reject) => "rejected",
            _ => "left unresolved",
        }
    }
}

/// The generic webhook's body; `event_id` (`ID:KIND`) is the same on
/// every instance and every retry, for receivers to drop repeats.
pub fn generic(
    kind: NotifyKind,
    notice: &Notice,
    decision: Option<&Decision>,
    link: &str,
) -> Value {
    let sent_at = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    let mut body = json!({
        "event": kind.event(),
        "event_id": format!("{}:{}", notice.id, kind.as_str()),
        "sent_at": sent_at,
        "request": notice,
        "link": link,
    });
    if let Some(d) = decision {
        body["decision"] = json!({"approver": cut(&d.approver), "outcome": d.outcome_name()});
    }
    body
}

/// Slack's `mrkdwn` escapes: `&`, `<` and `>`.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn facts(notice: &Notice) -> Vec<(&'static str, String)> {
    let mut facts = vec![("Point", notice.point.clone())];
    let optional = [
        ("Tool", &notice.tool),
        ("Agent", &notice.agent),
        ("Tenant", &notice.tenant),
        ("Reason", &notice.reason),
        ("Message", &notice.message),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            facts.push((name, v.clone()));
        }
    }
    facts.push(("Session", notice.session.clone()));
    facts
}

/// A Slack incoming-webhook message: a fallback `text`, a section of
/// fields and a button opening the page.
pub fn slack(kind: NotifyKind, notice: &Notice, decision: Option<&Decision>, link: &str) -> Value {
    let headline = slack_escape(&notice.headline(kind, decision));
    let fields: Vec<Value> = facts(notice)
        .into_iter()
        .map(|(k, v)| json!({"type": "mrkdwn", "text": format!("*{k}*\n{}", slack_escape(&v))}))
        .take(10)
        .collect();
    json!({
        "text": format!("{headline}: {link}"),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": format!("*{headline}*")}},
            {"type": "section", "fields": fields},
            {"type": "actions", "elements": [{
                "type": "button",
                "text": {"type": "plain_text", "text": "Open the approval page"},
                "url": link,
            }]},
        ],
    })
}

/// A Microsoft Teams incoming-webhook message carrying an Adaptive Card
/// (1.4): the headline, a fact set and an action opening the page.
pub fn teams(kind: NotifyKind, notice: &Notice, decision: Option<&Decision>, link: &str) -> Value {
    let facts: Vec<Value> = facts(notice)
        .into_iter()
        .map(|(k, v)| json!({"title": k, "value": v}))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "size": "Medium", "weight": "Bolder", "wrap": true,
                     "text": notice.headline(kind, decision)},
                    {"type": "FactSet", "facts": facts},
                ],
                "actions": [{"type": "Action.OpenUrl", "title": "Open the approval page", "url": link}],
            },
        }],
    })
}
