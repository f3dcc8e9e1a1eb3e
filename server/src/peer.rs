//! Who is calling: the verified identity of the host on the other end of a
//! mutual-TLS connection, available to a hook while it runs.
//!
//! The [`Interceptor`](hookwire::Interceptor) hooks take only the context,
//! so their signature stays the same whether a policy runs in-process or
//! as a service. The gRPC edge sets the caller's [`Peer`] in a tokio
//! task-local for the duration of each call, and a hook asks for it with
//! [`Peer::current`]:
//!
//! ```no_run
//! use hookwire_server::Peer;
//! use hookwire_server::prelude::*;
//!
//! struct TenantGate;
//!
//! #[async_trait]
//! impl Interceptor for TenantGate {
//!     type Response = Verdict;
//!     fn manifest(&self) -> Manifest {
//!         manifest("tenant-gate", "0.1.0")
//!     }
//!     async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
//!         match Peer::current() {
//!             Some(peer) if peer.dns_names.iter().any(|n| n == "billing-agent.internal") => {
//!                 Verdict::allow()
//!             }
//!             _ => Verdict::deny("unknown_caller"),
//!         }
//!     }
//! }
//! ```
//!
//! `Peer::current()` is `None` when the connection is plain or TLS without
//! a client certificate, when the policy runs in-process, and in tasks a
//! hook spawns (task-locals do not follow `tokio::spawn`: read it first and
//! move the value in). With [`Server::client_ca`](crate::Server::client_ca)
//! every call that reaches a hook has one: a host without a certificate
//! from that authority is refused during the handshake, before any hook
//! runs.

use std::net::IpAddr;

#[cfg(feature = "tls")]
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

tokio::task_local! {
    static PEER: Option<Peer>;
}

/// The verified client certificate of the connection a call came in on:
/// who the host proved it is during the mutual-TLS handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Peer {
    /// The certificate's subject as RFC 4514-style text, e.g.
    /// `CN=billing-agent, O=Acme` (empty when the subject is empty).
    pub subject: String,
    /// DNS names among its subject alternative names.
    pub dns_names: Vec<String>,
    /// IP addresses among its subject alternative names.
    pub ip_addresses: Vec<IpAddr>,
    /// URIs among its subject alternative names (e.g. SPIFFE IDs).
    pub uris: Vec<String>,
    /// E-mail addresses among its subject alternative names.
    pub emails: Vec<String>,
    /// The leaf certificate, DER, for checks of your own.
    pub certificate_der: Vec<u8>,
}

impl Peer {
    /// The caller of the call this hook is answering, when it presented a
    /// verified client certificate; see the module docs.
    pub fn current() -> Option<Peer> {
        PEER.try_with(Clone::clone).ok().flatten()
    }

    /// Reads the identity out of a DER certificate the TLS layer already
    /// verified; `None` when it does not parse as X.509. Public for other
    /// gRPC services on the same transport (the approval service). Needs
    /// the `tls` feature.
    #[cfg(feature = "tls")]
    pub fn from_der(der: &[u8]) -> Option<Self> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        let mut peer = Peer {
            subject: cert.subject().to_string(),
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            uris: Vec::new(),
            emails: Vec::new(),
            certificate_der: der.to_vec(),
        };
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(n) => peer.dns_names.push((*n).to_owned()),
                    GeneralName::URI(u) => peer.uris.push((*u).to_owned()),
                    GeneralName::RFC822Name(e) => peer.emails.push((*e).to_owned()),
                    GeneralName::IPAddress(bytes) => {
                        if let Some(ip) = ip_from_bytes(bytes) {
                            peer.ip_addresses.push(ip);
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(peer)
    }

    /// Runs `fut` with `peer` as [`Peer::current`].
    pub(crate) async fn scope<F: Future>(peer: Option<Peer>, fut: F) -> F::Output {
        PEER.scope(peer, fut).await
    }
}

#[cfg(feature = "tls")]
fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn current_is_set_only_inside_the_scope() {
        assert_eq!(Peer::current(), None);
        let peer = Peer {
            subject: "CN=host".into(),
            dns_names: vec!["host.internal".into()],
            ip_addresses: Vec::new(),
            uris: Vec::new(),
            emails: Vec::new(),
            certificate_der: Vec::new(),
        };
        let seen = Peer::scope(Some(peer.clone()), async { Peer::current() }).await;
        assert_eq!(seen, Some(peer));
        assert_eq!(Peer::current(), None);
        #[cfg(feature = "tls")]
        assert_eq!(Peer::from_der(b"not a certificate"), None);
    }
}
