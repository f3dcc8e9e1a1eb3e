//! The operator's access file: who the hosts and approvers are, how each
//! proves it, and which requests an approver may see and decide
//! ([`ApproverRules`]). Read from JSON (docs/approvals.md) or built in
//! code; [`Access::new`](super::Access::new) checks it.

use serde::{Deserialize, Serialize};

use super::token::token_sha256;
use crate::error::Error;
use hookwire::InterceptionPoint;

use crate::events::{DecisionSubject, PendingApproval};

/// The operator's access file: the hosts that may submit, the approvers
/// that may decide, and the token hashes revoked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Hosts (agents) allowed to open `Resolve` streams.
    #[serde(default)]
    pub hosts: Vec<PrincipalConfig>,
    /// People and systems allowed to watch and decide.
    #[serde(default)]
    pub approvers: Vec<ApproverConfig>,
    /// SHA-256 hashes of tokens that no longer authenticate anyone.
    #[serde(default)]
    pub revoked_token_sha256: Vec<String>,
}

/// How one principal proves who it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrincipalConfig {
    /// The name shown on decisions and records (1 to 64 printable
    /// characters).
    pub name: String,
    /// SHA-256 (hex) of the principal's bearer token; print one with
    /// `hookwire approvals token`.
    #[serde(default)]
    pub token_sha256: Option<String>,
    /// RFC 3339 time after which the token no longer authenticates.
    #[serde(default)]
    pub token_expires_at: Option<String>,
    /// A name of the principal's client certificate (its subject text, or
    /// a DNS, URI or e-mail SAN), when it authenticates by mutual TLS.
    #[serde(default)]
    pub client_certificate: Option<String>,
}

/// An approver: how it proves who it is, and what it may decide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproverConfig {
    /// Its credential and name.
    #[serde(flatten)]
    pub principal: PrincipalConfig,
    /// What it may decide; empty rules let it decide everything.
    #[serde(default)]
    pub rules: ApproverRules,
}

impl AccessConfig {
    /// Adds a host.
    #[must_use]
    pub fn host(mut self, host: PrincipalConfig) -> Self {
        self.hosts.push(host);
        self
    }

    /// Adds an approver.
    #[must_use]
    pub fn approver(mut self, approver: ApproverConfig) -> Self {
        self.approvers.push(approver);
        self
    }

    /// Revokes `token` (by its hash).
    #[must_use]
    pub fn revoke(mut self, token: &str) -> Self {
        self.revoked_token_sha256.push(token_sha256(token));
        self
    }

    /// Reads a JSON access file (see docs/approvals.md). The error names
    /// the line and column, never the content.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|e| {
            Error::AccessConfig(format!(
                "not a valid access file (line {}, column {}: {:?})",
                e.line(),
                e.column(),
                e.classify()
            ))
        })
    }
}

impl PrincipalConfig {
    /// A principal authenticated by `token`, of which only the hash is
    /// kept.
    pub fn token(name: impl Into<String>, token: &str) -> Self {
        Self {
            name: name.into(),
            token_sha256: Some(token_sha256(token)),
            ..Self::default()
        }
    }

    /// A principal authenticated by a client certificate carrying
    /// `certificate_name` (its subject text, or a DNS, URI or e-mail SAN).
    pub fn certificate(name: impl Into<String>, certificate_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            client_certificate: Some(certificate_name.into()),
            ..Self::default()
        }
    }

    /// The token stops authenticating at `rfc3339`.
    #[must_use]
    pub fn expires_at(mut self, rfc3339: impl Into<String>) -> Self {
        self.token_expires_at = Some(rfc3339.into());
        self
    }
}

impl ApproverConfig {
    /// An approver authenticated by `token`, without rules (it may decide
    /// everything).
    pub fn token(name: impl Into<String>, token: &str) -> Self {
        Self::from(PrincipalConfig::token(name, token))
    }

    /// Limits what it may decide.
    #[must_use]
    pub fn rules(mut self, rules: ApproverRules) -> Self {
        self.rules = rules;
        self
    }
}

impl From<PrincipalConfig> for ApproverConfig {
    fn from(principal: PrincipalConfig) -> Self {
        Self {
            principal,
            rules: ApproverRules::default(),
        }
    }
}

/// Which requests an approver may see and decide. Each non-empty list
/// must match (an empty list matches everything); a request outside them
/// is neither shown to the approver nor decidable by it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproverRules {
    /// Interception points, e.g. `pre_tool_call`.
    #[serde(default)]
    pub points: Vec<String>,
    /// Tool names (`tool_call.name`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Prefixes of the liftable deny's reason, e.g. `payments.`.
    #[serde(default)]
    pub reason_prefixes: Vec<String>,
    /// Agent ids (`agent.id`).
    #[serde(default)]
    pub agents: Vec<String>,
    /// Tenant ids (`tenant.id`).
    #[serde(default)]
    pub tenants: Vec<String>,
}

impl ApproverRules {
    /// `Ok` when `pending` is within the rules; otherwise which rule it
    /// falls outside (for the audit line, never quoting the context).
    pub fn check(&self, pending: &PendingApproval) -> Result<(), &'static str> {
        self.check_facts(&RuleFacts::of(pending))
    }

    /// [`check`](Self::check) on what the rules look at, kept without
    /// the request (the page's session trail).
    pub fn check_facts(&self, facts: &RuleFacts) -> Result<(), &'static str> {
        let within = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|v| list.iter().any(|l| l == v))
        };
        if !within(&self.points, Some(facts.point.as_str())) {
            return Err("points");
        }
        if !within(&self.tools, facts.tool.as_deref()) {
            return Err("tools");
        }
        let reason = facts.reason.as_deref().unwrap_or("");
        if !self.reason_prefixes.is_empty()
            && !self
                .reason_prefixes
                .iter()
                .any(|p| reason.starts_with(p.as_str()))
        {
            return Err("reason_prefixes");
        }
        if !within(&self.agents, facts.agent.as_deref()) {
            return Err("agents");
        }
        if !within(&self.tenants, facts.tenant.as_deref()) {
            return Err("tenants");
        }
        Ok(())
    }

    /// Whether `pending` is within the rules.
    pub fn permits(&self, pending: &PendingApproval) -> bool {
        self.check(pending).is_ok()
    }

    /// Whether a decided request, as the audit log describes it, is
    /// within the rules. The log keeps no agent or tenant, so rules naming
    /// agents or tenants cover no logged request.
    pub fn covers(&self, subject: &DecisionSubject) -> bool {
        let within = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|v| list.iter().any(|l| l == v))
        };
        let reason = subject.reason.as_deref().unwrap_or("");
        within(&self.points, Some(subject.interception_point.as_str()))
            && within(&self.tools, subject.tool_name.as_deref())
            && (self.reason_prefixes.is_empty()
                || self
                    .reason_prefixes
                    .iter()
                    .any(|p| reason.starts_with(p.as_str())))
            && self.agents.is_empty()
            && self.tenants.is_empty()
    }
}

/// What [`ApproverRules`] look at in a request: its point, tool, reason,
/// agent and tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFacts {
    /// `interception_point`.
    pub point: InterceptionPoint,
    /// `tool_call.name`, at the tool points.
    pub tool: Option<String>,
    /// The liftable deny's reason.
    pub reason: Option<String>,
    /// `agent.id`.
    pub agent: Option<String>,
    /// `tenant.id`.
    pub tenant: Option<String>,
}

impl RuleFacts {
    /// The facts of `pending`.
    pub fn of(pending: &PendingApproval) -> Self {
        let ctx = &pending.request.context;
        let id_of = |member: &str| {
            ctx.get(member)
                .and_then(|v| v.get("id"))
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        Self {
            point: pending.request.interception_point,
            tool: pending.tool_name().map(str::to_owned),
            reason: pending.request.verdict.reason.clone(),
            agent: id_of("agent"),
            tenant: id_of("tenant"),
        }
    }
}

/// A principal's name: 1 to 64 characters, none of them control
/// characters.
pub(super) fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(Error::AccessConfig(format!(
            "principal name {name:?} must be 1 to 64 printable characters"
        )));
    }
    Ok(())
}
