//! Who may talk to an approval service, and what each one may do.
//!
//! Hosts and approvers are different principals. A host submits requests
//! on `Resolve`; an approver watches and decides on `Watch`, `Decide` and
//! the web page. Each proves who it is with either
//!
//! - a bearer token the operator issued (`authorization: Bearer <token>`
//!   on gRPC, the sign-in form on the page). The service keeps only the
//!   token's SHA-256 ([`token_sha256`]); a token may carry an expiry, and
//!   the operator revokes one by listing its hash; or
//! - a verified mutual-TLS client certificate, matched by one of its
//!   names (subject, DNS, URI or e-mail SAN).
//!
//! The name on every decision and every "seen" notice is the principal's
//! configured name, never a request field. An approver may decide only the
//! requests its [`ApproverRules`] cover; the rest it does not see.
//!
//! [`AccessConfig`] is the operator's file (JSON, see docs/approvals.md);
//! [`Access`] is its checked form, asked by the gRPC edge and the page.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::events::{ApproverIdentity, AuthMethod, DecisionSubject, PendingApproval};
use crate::error::Error;
use hookwire_server::Peer;

/// Bytes of randomness in a token made by [`new_token`]: 256 bits.
const TOKEN_BYTES: usize = 32;

/// Prefix of every token [`new_token`] makes, so that a leaked one is
/// recognisable in a secret scanner.
pub const TOKEN_PREFIX: &str = "hwa_";

/// Longest bearer token the service reads; longer ones are refused
/// unread.
pub const MAX_TOKEN_LEN: usize = 512;

/// A fresh high-entropy token from the operating system's generator,
/// `hwa_` and 64 hex digits.
pub fn new_token() -> Result<String, Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::Random(e.to_string()))?;
    Ok(format!("{TOKEN_PREFIX}{}", hex(&bytes)))
}

/// The hash the configuration stores for `token`: SHA-256, lowercase hex.
pub fn token_sha256(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

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
        let ctx = &pending.request.context;
        let id_of = |member: &str| {
            ctx.get(member)
                .and_then(|v| v.get("id"))
                .and_then(|v| v.as_str())
        };
        let within = |list: &[String], value: Option<&str>| {
            list.is_empty() || value.is_some_and(|v| list.iter().any(|l| l == v))
        };
        if !within(
            &self.points,
            Some(pending.request.interception_point.as_str()),
        ) {
            return Err("points");
        }
        if !within(&self.tools, pending.tool_name()) {
            return Err("tools");
        }
        let reason = pending.request.verdict.reason.as_deref().unwrap_or("");
        if !self.reason_prefixes.is_empty()
            && !self
                .reason_prefixes
                .iter()
                .any(|p| reason.starts_with(p.as_str()))
        {
            return Err("reason_prefixes");
        }
        if !within(&self.agents, id_of("agent")) {
            return Err("agents");
        }
        if !within(&self.tenants, id_of("tenant")) {
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

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A host: may submit requests, nothing else.
    Host {
        /// Its configured name.
        name: String,
    },
    /// An approver: may watch and decide within its rules, never submit.
    Approver(Arc<ApproverAccess>),
}

impl Proof {
    /// How the queue's audit log names it.
    pub fn method(self) -> AuthMethod {
        match self {
            Self::Token => AuthMethod::BearerToken,
            Self::Certificate => AuthMethod::ClientCertificate,
        }
    }
}

impl Principal {
    /// The configured name.
    pub fn name(&self) -> &str {
        match self {
            Self::Host { name } => name,
            Self::Approver(a) => &a.name,
        }
    }
}

/// An authenticated approver: its name, how it proved it, and its rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproverAccess {
    /// The configured name, carried on every decision it makes.
    pub name: String,
    /// What it may decide.
    pub rules: ApproverRules,
}

impl ApproverAccess {
    /// The identity the queue records for this approver, proved by
    /// `method`.
    pub fn identity(&self, method: AuthMethod) -> ApproverIdentity {
        ApproverIdentity::verified(self.name.clone(), method)
    }
}

/// How a principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// An operator-issued bearer token (or a page session signed in with
    /// one).
    Token,
    /// A verified client certificate.
    Certificate,
}

/// Why a caller was not let in. Never carries the credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Denial {
    /// No credential at all.
    Missing,
    /// A token that matches no principal (forged, mistyped, or malformed).
    UnknownToken,
    /// A token past its configured expiry.
    ExpiredToken,
    /// A token whose hash the operator revoked.
    RevokedToken,
    /// A client certificate that names no principal.
    UnknownCertificate,
    /// Authenticated, but as the wrong kind of principal for the call.
    WrongPrincipal,
    /// An approver deciding a request outside its rules.
    OutsideRules,
}

impl Denial {
    /// Whether the caller is unknown (UNAUTHENTICATED / 401) rather than
    /// known and refused (PERMISSION_DENIED / 403).
    pub fn is_unauthenticated(self) -> bool {
        !matches!(self, Self::WrongPrincipal | Self::OutsideRules)
    }

    /// A short name, for logs and answers.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "no credential",
            Self::UnknownToken => "unknown token",
            Self::ExpiredToken => "expired token",
            Self::RevokedToken => "revoked token",
            Self::UnknownCertificate => "unknown client certificate",
            Self::WrongPrincipal => "not allowed for this principal",
            Self::OutsideRules => "outside the approver's rules",
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller presented.
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// The bearer token, if any.
    pub token: Option<&'a str>,
    /// The verified client certificate, if any.
    pub peer: Option<&'a Peer>,
}

#[derive(Debug, Clone)]
struct Entry {
    principal: Principal,
    token_sha256: Option<[u8; 32]>,
    expires_at: Option<OffsetDateTime>,
    certificate: Option<String>,
}

/// The checked access configuration: who is who, and what each may do.
/// Cheap to clone; clones share one list, which
/// [`reload`](Access::reload) replaces for all of them at once.
#[derive(Clone)]
pub struct Access {
    table: Arc<RwLock<Arc<Table>>>,
}

/// One version of the access list.
#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    revoked: Vec<[u8; 32]>,
    /// Counts reloads: sessions opened under an older list are over.
    generation: u64,
}

impl Default for Access {
    /// Nobody: every call over the network is refused. For a service used
    /// only by in-process hosts and approvers (the queue's Rust API).
    fn default() -> Self {
        Self::from_table(Table::default())
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Names only: hashes stay out of debug output too.
        f.debug_struct("Access")
            .field(
                "principals",
                &self
                    .table()
                    .entries
                    .iter()
                    .map(|e| e.principal.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

fn parse_hash(what: &str, hash: &str) -> Result<[u8; 32], Error> {
    let bad = || Error::AccessConfig(format!("{what}: a token hash must be 64 hex digits"));
    let hash = hash.trim();
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, chunk) in hash.as_bytes().chunks(2).enumerate() {
        let text = std::str::from_utf8(chunk).map_err(|_| bad())?;
        out[i] = u8::from_str_radix(text, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(Error::AccessConfig(format!(
            "principal name {name:?} must be 1 to 64 printable characters"
        )));
    }
    Ok(())
}

impl Access {
    /// Checks `config`: names unique and printable, every hash 64 hex
    /// digits, every expiry RFC 3339, every principal with a credential.
    pub fn new(config: &AccessConfig) -> Result<Self, Error> {
        let mut entries = Vec::new();
        let hosts = config.hosts.iter().map(|h| {
            (
                h,
                Principal::Host {
                    name: h.name.clone(),
                },
            )
        });
        let approvers = config.approvers.iter().map(|a| {
            (
                &a.principal,
                Principal::Approver(Arc::new(ApproverAccess {
                    name: a.principal.name.clone(),
                    rules: a.rules.clone(),
                })),
            )
        });
        for (p, principal) in hosts.chain(approvers) {
            check_name(&p.name)?;
            if entries.iter().any(|e: &Entry| e.principal.name() == p.name) {
                return Err(Error::AccessConfig(format!(
                    "principal {:?} is configured twice",
                    p.name
                )));
            }
            if p.token_sha256.is_none() && p.client_certificate.is_none() {
                return Err(Error::AccessConfig(format!(
                    "principal {:?} has neither token_sha256 nor client_certificate",
                    p.name
                )));
            }
            let token_sha256 = p
                .token_sha256
                .as_deref()
                .map(|h| parse_hash(&p.name, h))
                .transpose()?;
            if token_sha256.is_some()
                && entries
                    .iter()
                    .any(|e: &Entry| e.token_sha256.is_some() && e.token_sha256 == token_sha256)
            {
                return Err(Error::AccessConfig(format!(
                    "principal {:?} shares its token with another principal",
                    p.name
                )));
            }
            let expires_at = p
                .token_expires_at
                .as_deref()
                .map(|t| {
                    OffsetDateTime::parse(t, &Rfc3339).map_err(|_| {
                        Error::AccessConfig(format!(
                            "principal {:?}: token_expires_at must be RFC 3339",
                            p.name
                        ))
                    })
                })
                .transpose()?;
            entries.push(Entry {
                principal,
                token_sha256,
                expires_at,
                certificate: p.client_certificate.clone(),
            });
        }
        let revoked = config
            .revoked_token_sha256
            .iter()
            .map(|h| parse_hash("revoked_token_sha256", h))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::from_table(Table {
            entries,
            revoked,
            generation: 0,
        }))
    }

    fn from_table(table: Table) -> Self {
        Self {
            table: Arc::new(RwLock::new(Arc::new(table))),
        }
    }

    /// The list in force now.
    fn table(&self) -> Arc<Table> {
        Arc::clone(&self.table.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the list for every clone of this `Access` (the gRPC
    /// service and the page alike) with `config`, once `config` checks
    /// out as [`Access::new`] checks it; a config that does not check out
    /// changes nothing and is returned as the error. How a running service
    /// takes a revoked token, a new principal or changed rules without a
    /// restart (see [`replace_with`](Self::replace_with)).
    pub fn reload(&self, config: &AccessConfig) -> Result<(), Error> {
        self.replace_with(&Self::new(config)?);
        Ok(())
    }

    /// Puts `fresh`'s list (already checked) in force for every clone of
    /// this `Access`. Every call, and every message of an open stream
    /// (at least every heartbeat), is authenticated against the list in
    /// force when it arrives: an open stream whose credential no longer
    /// names the same principal ends, and page sessions signed in under
    /// an older list are over (their approvers sign in again).
    pub fn replace_with(&self, fresh: &Access) {
        let fresh = fresh.table();
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        let generation = table.generation.wrapping_add(1);
        *table = Arc::new(Table {
            entries: fresh.entries.clone(),
            revoked: fresh.revoked.clone(),
            generation,
        });
    }

    /// Which version of the list is in force: 0 at start, one more per
    /// [`reload`](Self::reload).
    pub fn generation(&self) -> u64 {
        self.table().generation
    }

    /// Whether any approver is configured (a service with none can never
    /// decide anything).
    pub fn has_approvers(&self) -> bool {
        self.table()
            .entries
            .iter()
            .any(|e| matches!(e.principal, Principal::Approver(_)))
    }

    /// Who presented `credentials`. A token is checked first (by its
    /// hash, in constant time against every entry); without one, the
    /// client certificate.
    pub fn authenticate(&self, credentials: Credentials<'_>) -> Result<(Principal, Proof), Denial> {
        if let Some(token) = credentials.token {
            return self.by_token(token).map(|p| (p, Proof::Token));
        }
        if let Some(peer) = credentials.peer {
            return self.by_certificate(peer).map(|p| (p, Proof::Certificate));
        }
        Err(Denial::Missing)
    }

    fn by_token(&self, token: &str) -> Result<Principal, Denial> {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(Denial::UnknownToken);
        }
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let table = self.table();
        let revoked = table
            .revoked
            .iter()
            .fold(false, |r, h| r | bool::from(h.ct_eq(&digest)));
        let mut found = None;
        for e in &table.entries {
            if let Some(h) = &e.token_sha256
                && bool::from(h.ct_eq(&digest))
            {
                found = Some(e);
            }
        }
        let entry = found.ok_or(Denial::UnknownToken)?;
        if revoked {
            return Err(Denial::RevokedToken);
        }
        if entry
            .expires_at
            .is_some_and(|t| t <= OffsetDateTime::now_utc())
        {
            return Err(Denial::ExpiredToken);
        }
        Ok(entry.principal.clone())
    }

    fn by_certificate(&self, peer: &Peer) -> Result<Principal, Denial> {
        let names = || {
            std::iter::once(&peer.subject)
                .chain(&peer.dns_names)
                .chain(&peer.uris)
                .chain(&peer.emails)
        };
        self.table()
            .entries
            .iter()
            .find(|e| {
                e.certificate
                    .as_ref()
                    .is_some_and(|c| names().any(|n| n == c))
            })
            .map(|e| e.principal.clone())
            .ok_or(Denial::UnknownCertificate)
    }

    /// Authenticates a host: any other principal is refused.
    pub fn host(&self, credentials: Credentials<'_>) -> Result<String, Denial> {
        match self.authenticate(credentials)? {
            (Principal::Host { name }, _) => Ok(name),
            (Principal::Approver(_), _) => Err(Denial::WrongPrincipal),
        }
    }

    /// Authenticates an approver: any other principal is refused.
    pub fn approver(
        &self,
        credentials: Credentials<'_>,
    ) -> Result<(Arc<ApproverAccess>, Proof), Denial> {
        match self.authenticate(credentials)? {
            (Principal::Approver(a), proof) => Ok((a, proof)),
            (Principal::Host { .. }, _) => Err(Denial::WrongPrincipal),
        }
    }
}

/// Reads `Bearer <token>` out of an `authorization` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(token: &str) -> AccessConfig {
        serde_json::from_value(serde_json::json!({
            "hosts": [{"name": "billing-agent", "token_sha256": token_sha256("host-token")}],
            "approvers": [
                {"name": "ann", "token_sha256": token_sha256(token), "rules": {"tools": ["wire_transfer"]}},
                {"name": "old", "token_sha256": token_sha256("old-token"), "token_expires_at": "2020-01-01T00:00:00Z"},
                {"name": "gone", "token_sha256": token_sha256("gone-token")},
                {"name": "cert", "client_certificate": "approver.internal"}
            ],
            "revoked_token_sha256": [token_sha256("gone-token")]
        }))
        .unwrap()
    }

    #[test]
    fn tokens_authenticate_by_hash_and_expire_and_revoke() {
        let access = Access::new(&config("ann-token")).unwrap();
        let creds = |t| Credentials {
            token: Some(t),
            peer: None,
        };
        assert_eq!(access.approver(creds("ann-token")).unwrap().0.name, "ann");
        assert_eq!(access.host(creds("host-token")).unwrap(), "billing-agent");
        assert_eq!(access.host(creds("ann-token")), Err(Denial::WrongPrincipal));
        assert_eq!(
            access.approver(creds("host-token")).unwrap_err(),
            Denial::WrongPrincipal
        );
        assert_eq!(
            access.approver(creds("forged")).unwrap_err(),
            Denial::UnknownToken
        );
        assert_eq!(
            access.approver(creds("old-token")).unwrap_err(),
            Denial::ExpiredToken
        );
        assert_eq!(
            access.approver(creds("gone-token")).unwrap_err(),
            Denial::RevokedToken
        );
        assert_eq!(
            access.approver(Credentials::default()).unwrap_err(),
            Denial::Missing
        );
        assert!(format!("{access:?}").contains("ann"));
        assert!(!format!("{access:?}").contains(&token_sha256("ann-token")));
    }

    #[test]
    fn bad_configurations_are_refused() {
        let mut c = config("t");
        c.approvers[0].principal.token_sha256 = Some("abc".into());
        assert!(Access::new(&c).is_err());
        let mut c = config("t");
        c.approvers[0].principal.name = "old".into();
        assert!(Access::new(&c).is_err());
        let mut c = config("t");
        c.approvers[0].principal.token_sha256 = Some(token_sha256("host-token"));
        assert!(Access::new(&c).is_err());
        let mut c = config("t");
        c.approvers[0].principal.token_sha256 = None;
        assert!(Access::new(&c).is_err());
    }

    #[test]
    fn new_tokens_are_distinct_and_hash_to_64_hex_digits() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 64);
        assert_eq!(token_sha256(&a).len(), 64);
        assert_eq!(bearer("Bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
    }
}
