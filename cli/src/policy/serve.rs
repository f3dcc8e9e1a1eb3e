//! `hookwire policy serve`: its flags mapped onto the policy service's
//! settings (`hookwire_policy::settings`), served by `hookwire_policy::run`
//! until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use hookwire_policy::PolicyOptions;
use hookwire_policy::settings::{Listen, RawBundle, RawSettings, Settings, TLS_ON_UNIX};
use hookwire_telemetry::Telemetry;

use super::ops::OpsArgs;
use crate::args::ListenAddr;
use crate::error::CliError;

/// What `policy serve` was asked to do.
pub(crate) struct ServeRequest {
    /// The policy directory (unless a bundle).
    pub(crate) dir: Option<PathBuf>,
    /// The gRPC address: TCP, or an owner-only Unix socket.
    pub(crate) addr: ListenAddr,
    /// Do not watch the directory.
    pub(crate) no_watch: bool,
    /// The metrics and status address.
    pub(crate) metrics_addr: Option<SocketAddr>,
    /// Evaluation options.
    pub(crate) options: PolicyOptions,
    /// The operator flags.
    pub(crate) ops: OpsArgs,
}

/// Serves the policies until Ctrl-C or SIGTERM, with the decision log, metrics,
/// status and TLS the request asks for.
pub(crate) async fn serve(
    request: ServeRequest,
    telemetry: Option<&Telemetry>,
) -> Result<(), CliError> {
    let ServeRequest {
        dir,
        addr,
        no_watch,
        metrics_addr,
        options,
        ops,
    } = request;
    let listen = match addr {
        ListenAddr::Tcp(addr) => Listen::Tcp(addr),
        ListenAddr::Unix(path) => Listen::Unix(path),
    };
    if matches!(listen, Listen::Unix(_)) && ops.tls.enabled() {
        // Said before any TLS file is read, as the settings would.
        return Err(hookwire_policy::Error::InvalidSettings(TLS_ON_UNIX.into()).into());
    }
    let decision_log = ops.log.raw(telemetry)?;
    let bundle = match &ops.bundle.bundle {
        Some(location) => Some(RawBundle {
            location: location.clone(),
            options: ops.bundle.options(options)?,
            poll_ms: ops.bundle.bundle_poll_ms,
        }),
        None => None,
    };
    let settings = Settings::try_from(RawSettings {
        dir,
        bundle,
        listen,
        watch: !no_watch,
        metrics_addr,
        options,
        decision_log,
        tls: ops.tls.pem()?,
    })?;
    hookwire_policy::run(settings, crate::shutdown::requested()).await?;
    Ok(())
}
