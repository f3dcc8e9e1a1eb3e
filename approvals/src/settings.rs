//! What [`crate::run`] needs to serve the approval service, validated
//! before anything starts: the gRPC and page addresses, the name and
//! heartbeat, TLS, the access list, the metrics address, the notification
//! channels and the TLS toward webhook receivers, and the queue (in memory
//! unless a shared one is given with [`Settings::with_queue`]).
//! [`Settings`] is made only from [`RawSettings`] (`TryFrom`), so that
//! tokens in plaintext beyond loopback, or notifications with no page to
//! link to, are refused with [`Error::InvalidSettings`] before a port is
//! bound. `hookwire approvals serve` merges its config file and flags into
//! [`RawSettings`]; a test or another program builds one directly.

use std::net::SocketAddr;
use std::time::Duration;

use hookwire_edge::https::UpstreamTls;

use crate::auth::Access;
use crate::error::Error;
use crate::notify::NotifyConfig;
use crate::queue::ApprovalQueue;
use crate::tls::ServiceTls;

/// The settings as given (a config file and flags, a test), before
/// validation.
#[derive(Debug)]
pub struct RawSettings {
    /// The gRPC address (port 0: any free port, announced).
    pub grpc: SocketAddr,
    /// The approval page's address, unless the page is not served.
    pub web: Option<SocketAddr>,
    /// The name announced to hosts and approvers.
    pub name: Option<String>,
    /// The streams' heartbeat interval.
    pub heartbeat: Option<Duration>,
    /// TLS for gRPC and the page.
    pub tls: Option<ServiceTls>,
    /// Serve tokens without TLS beyond loopback (behind a TLS-terminating
    /// proxy only).
    pub allow_plaintext: bool,
    /// Who may use the service (kept: replacing its list takes effect at
    /// once).
    pub access: Access,
    /// Where the Prometheus series are served.
    pub metrics_addr: Option<SocketAddr>,
    /// The notification channels.
    pub notify: Option<NotifyConfig>,
    /// TLS toward `https` webhook receivers.
    pub webhook_tls: UpstreamTls,
}

/// Validated settings of the approval service: what [`crate::run`] serves.
#[derive(Debug)]
pub struct Settings {
    pub(crate) raw: RawSettings,
    pub(crate) queue: Option<ApprovalQueue>,
}

impl Settings {
    /// Serves `queue` (e.g. one shared in PostgreSQL by several
    /// instances) instead of a queue in this process's memory.
    pub fn with_queue(mut self, queue: ApprovalQueue) -> Self {
        self.queue = Some(queue);
        self
    }
}

impl TryFrom<RawSettings> for Settings {
    type Error = Error;

    fn try_from(raw: RawSettings) -> Result<Self, Error> {
        if raw.tls.is_none() && !raw.allow_plaintext {
            let exposed = std::iter::once(raw.grpc)
                .chain(raw.web)
                .find(|a| !a.ip().is_loopback());
            if let Some(addr) = exposed {
                return Err(Error::InvalidSettings(format!(
                    "{addr} is not a loopback address: serve it over TLS (--tls-cert, --tls-key), \
                     or pass --allow-plaintext behind a TLS-terminating proxy"
                )));
            }
        }
        if let Some(notify) = &raw.notify
            && notify.page_url.is_none()
            && raw.web.is_none()
        {
            return Err(Error::InvalidSettings(
                "notify: the page is not served here (--no-web): give notify.page_url, \
                 the page's public URL, for the notifications' links"
                    .into(),
            ));
        }
        Ok(Self { raw, queue: None })
    }
}
