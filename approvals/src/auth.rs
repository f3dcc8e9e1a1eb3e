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
//! [`AccessConfig`] is the operator's file (JSON, see docs/approvals.md;
//! `config`); [`Access`] is its checked form, asked by the gRPC edge and
//! the page, here; `token` makes, hashes and reads bearer tokens.

mod config;
mod token;

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use hookwire_edge::token::{matching, sha256 as token_digest};
use hookwire_server::Peer;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::Error;
use crate::events::{ApproverIdentity, AuthMethod};
use config::check_name;
pub use config::{AccessConfig, ApproverConfig, ApproverRules, PrincipalConfig, RuleFacts};
use token::parse_hash;
pub(crate) use token::random_hex;
pub use token::{MAX_TOKEN_LEN, TOKEN_PREFIX, bearer, new_token, token_sha256};

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
    /// An `authorization` header that is not `Bearer <token68>`.
    MalformedToken,
    /// A token that matches no principal (forged or mistyped).
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
            Self::MalformedToken => "malformed authorization header",
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
/// [`reload`](Access::reload) replaces for all of them at once (every
/// call reads the list in force without a lock).
#[derive(Clone)]
pub struct Access {
    table: Arc<ArcSwap<Table>>,
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
            table: Arc::new(ArcSwap::from_pointee(table)),
        }
    }

    /// The list in force now.
    fn table(&self) -> Arc<Table> {
        self.table.load_full()
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
        self.table.rcu(|current| Table {
            entries: fresh.entries.clone(),
            revoked: fresh.revoked.clone(),
            generation: current.generation.wrapping_add(1),
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

    /// The approver configured under `name`, in the list in force: how
    /// notifications are routed by an approver's rules. Authenticates
    /// nobody.
    pub fn approver_named(&self, name: &str) -> Option<Arc<ApproverAccess>> {
        self.table()
            .entries
            .iter()
            .find_map(|e| match &e.principal {
                Principal::Approver(a) if a.name == name => Some(Arc::clone(a)),
                _ => None,
            })
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
        let digest = token_digest(token);
        let table = self.table();
        let revoked = matching(table.revoked.iter().map(|h| ((), h)), &digest).is_some();
        let entry = matching(
            table
                .entries
                .iter()
                .filter_map(|e| e.token_sha256.as_ref().map(|h| (e, h))),
            &digest,
        )
        .ok_or(Denial::UnknownToken)?;
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
        assert_eq!(bearer("Bearer  abc ").unwrap(), "abc");
        assert_eq!(bearer("bearer abc").unwrap(), "abc");
        assert!(bearer("Basic abc").is_err());
        assert!(bearer("Bearer ").is_err());
    }
}
