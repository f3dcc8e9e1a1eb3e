//! What [`crate::run`] needs to serve a policy set, validated before
//! anything starts: where the policies come from (a directory, watched or
//! not, or a polled bundle), where the service listens, its metrics and
//! status address, its decision log and its TLS. [`Settings`] is made only
//! from [`RawSettings`] (`TryFrom`), so an impossible combination (TLS on
//! a Unix socket, no source at all) is refused with an
//! [`Error::InvalidSettings`] before a port is bound. `hookwire policy
//! serve` maps its flags onto [`RawSettings`]; a test or another program
//! builds one directly.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::bundle::BundleOptions;
use crate::decision_log::{Inclusion, LogWriter};
use crate::error::Error;
use crate::report::PolicyOptions;

/// Why TLS on a Unix socket is refused (a caller that reads the TLS files
/// itself says it before reading them).
pub const TLS_ON_UNIX: &str =
    "TLS applies to TCP addresses: a unix:/path socket is authenticated by its permissions";

/// Where the service listens: the gRPC address hosts reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address (port 0: any free port, announced).
    Tcp(SocketAddr),
    /// An owner-only Unix socket at this path.
    Unix(PathBuf),
}

/// A bundle to serve instead of a directory, as given.
#[derive(Debug)]
pub struct RawBundle {
    /// The bundle's path or `http(s)://` URL.
    pub location: String,
    /// How it is fetched and verified, and the policy options it loads with.
    pub options: BundleOptions,
    /// How often it is polled, in milliseconds (at least 10 are used).
    pub poll_ms: u64,
}

/// Where decision log entries go.
pub enum DecisionLogSink {
    /// JSON lines on standard output.
    Stdout,
    /// JSON lines appended to this file.
    File(PathBuf),
    /// Any other writer (e.g. the command's OTLP log records).
    Writer(Box<dyn LogWriter>),
}

impl std::fmt::Debug for DecisionLogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdout => f.write_str("Stdout"),
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
            Self::Writer(_) => f.write_str("Writer(..)"),
        }
    }
}

/// The decision log asked for, as given.
#[derive(Debug)]
pub struct RawDecisionLog {
    /// Where entries go.
    pub sink: DecisionLogSink,
    /// Parts of each context logged, `/`-separated paths.
    pub include: Vec<String>,
    /// Paths removed from what `include` logs.
    pub mask: Vec<String>,
    /// Entries held before new ones are dropped (and counted).
    pub buffer: usize,
}

/// The service's TLS: PEM certificate chain and key, and the authority
/// hosts' client certificates must chain to (mutual TLS), when given.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// The PEM certificate chain.
    pub cert_pem: Vec<u8>,
    /// Its PEM private key.
    pub key_pem: Vec<u8>,
    /// The PEM authority of hosts' client certificates.
    pub client_ca_pem: Option<Vec<u8>>,
}

/// The settings as given (flags, a test), before validation.
#[derive(Debug)]
pub struct RawSettings {
    /// The policy directory, unless `bundle`.
    pub dir: Option<PathBuf>,
    /// The bundle served instead of a directory.
    pub bundle: Option<RawBundle>,
    /// Where the gRPC service listens.
    pub listen: Listen,
    /// Whether the directory is watched and reloaded on changes.
    pub watch: bool,
    /// Where the metrics (`/metrics`) and status (`/status`) are served.
    pub metrics_addr: Option<SocketAddr>,
    /// Evaluation options (the directory's; a bundle carries its own).
    pub options: PolicyOptions,
    /// The decision log, if any.
    pub decision_log: Option<RawDecisionLog>,
    /// TLS, if any (TCP only).
    pub tls: Option<ServerTls>,
}

/// Where the served policies come from, validated.
#[derive(Debug)]
pub(crate) enum Source {
    /// A directory, watched unless `watch` is false.
    Dir { dir: PathBuf, watch: bool },
    /// A bundle polled every `poll`.
    Bundle {
        location: String,
        options: Box<BundleOptions>,
        poll: Duration,
    },
}

/// The decision log, validated.
#[derive(Debug)]
pub(crate) struct DecisionLogSettings {
    pub(crate) sink: DecisionLogSink,
    pub(crate) inclusion: Inclusion,
    pub(crate) buffer: usize,
}

/// Validated settings of the policy service: what [`crate::run`] serves.
#[derive(Debug)]
pub struct Settings {
    pub(crate) source: Source,
    pub(crate) listen: Listen,
    pub(crate) metrics_addr: Option<SocketAddr>,
    pub(crate) options: PolicyOptions,
    pub(crate) decision_log: Option<DecisionLogSettings>,
    pub(crate) tls: Option<ServerTls>,
}

impl TryFrom<RawSettings> for Settings {
    type Error = Error;

    fn try_from(raw: RawSettings) -> Result<Self, Error> {
        if matches!(raw.listen, Listen::Unix(_)) && raw.tls.is_some() {
            return Err(Error::InvalidSettings(TLS_ON_UNIX.into()));
        }
        let decision_log = raw
            .decision_log
            .map(|log| {
                Ok::<_, Error>(DecisionLogSettings {
                    inclusion: Inclusion::new(&log.include, &log.mask)?,
                    sink: log.sink,
                    buffer: log.buffer,
                })
            })
            .transpose()?;
        let source = match (raw.bundle, raw.dir) {
            (Some(bundle), _) => Source::Bundle {
                location: bundle.location,
                options: Box::new(bundle.options),
                poll: Duration::from_millis(bundle.poll_ms.max(10)),
            },
            (None, Some(dir)) => Source::Dir {
                dir,
                watch: raw.watch,
            },
            (None, None) => {
                return Err(Error::InvalidSettings(
                    "give a policy directory or --bundle".into(),
                ));
            }
        };
        Ok(Self {
            source,
            listen: raw.listen,
            metrics_addr: raw.metrics_addr,
            options: raw.options,
            decision_log,
            tls: raw.tls,
        })
    }
}
