//! `approvals serve`'s settings: its flags, the JSON config file they
//! override (`--config`, all members optional), the access list (in the
//! file or its own, `--access`) and its reload on `SIGHUP`, merged into
//! the [`Settings`] the service runs with. A refusal names the file and
//! the place, never the content (it may hold hashes).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookwire_approvals::{Access, AccessConfig, NotifyConfig, ServiceTls};
use hookwire_edge::https::UpstreamTls;
use serde::Deserialize;

use crate::error::CliError;

/// Where `approvals serve` listens for gRPC unless told otherwise.
pub(crate) const APPROVALS_GRPC_ADDR: &str = "127.0.0.1:50061";
/// Where `approvals serve` serves the page unless told otherwise.
pub(crate) const APPROVALS_WEB_ADDR: &str = "127.0.0.1:50062";

/// `approvals serve`'s flags. Each one overrides the config file's value.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example (the access list and TLS files as docs/approvals.md describes):\n  hookwire approvals serve --config approvals.json --metrics-addr 127.0.0.1:9461"
)]
pub(crate) struct ServeArgs {
    /// JSON settings file: addresses, TLS files, the access list, the
    /// notification channels (see docs/approvals.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A JSON access list (hosts, approvers, revoked token hashes),
    /// replacing the config file's `access`.
    #[arg(long, value_name = "FILE")]
    access: Option<PathBuf>,
    /// gRPC address (default 127.0.0.1:50061).
    #[arg(long, value_name = "ADDR")]
    grpc_addr: Option<SocketAddr>,
    /// Web page address (default 127.0.0.1:50062).
    #[arg(long, value_name = "ADDR")]
    web_addr: Option<SocketAddr>,
    /// Do not serve the web page.
    #[arg(long)]
    no_web: bool,
    /// PEM certificate chain for gRPC and the page (TLS).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of the certificate.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// PEM authority whose client certificates are verified (mTLS); a
    /// verified certificate authenticates the principal that names it.
    #[arg(long, value_name = "FILE")]
    client_ca: Option<PathBuf>,
    /// Refuse connections without a client certificate from
    /// `--client-ca` (otherwise a token also authenticates).
    #[arg(long)]
    require_client_cert: bool,
    /// Serve without TLS on an address other than loopback (tokens then
    /// cross the network in clear: only behind a TLS-terminating proxy).
    #[arg(long)]
    allow_plaintext: bool,
    /// The name announced to hosts and approvers.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Heartbeat interval of the streams.
    #[arg(long, value_name = "MS")]
    heartbeat_ms: Option<u64>,
    /// The shared PostgreSQL queue (`postgres://...`), for several
    /// instances acting as one service. Without it the queue lives in
    /// this process's memory.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Serve the service's Prometheus metrics (`hookwire_approval_*`) at
    /// `http://ADDR/metrics`. Unauthenticated and without payloads: bind
    /// it where only the scraper reaches. Given without ADDR:
    /// 127.0.0.1:9461.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::args::APPROVALS_METRICS_ADDR)]
    metrics_addr: Option<SocketAddr>,
    /// A PEM bundle of certificate authorities an `https` webhook
    /// receiver's certificate may chain to, beside the web PKI roots.
    #[arg(long, value_name = "FILE")]
    webhook_ca: Option<PathBuf>,
    /// A PEM client certificate (chain) presented to webhook receivers
    /// that ask for one (mutual TLS); with `--webhook-client-key`.
    #[arg(long, value_name = "FILE", requires = "webhook_client_key")]
    webhook_client_cert: Option<PathBuf>,
    /// The PEM private key of `--webhook-client-cert`.
    #[arg(long, value_name = "FILE", requires = "webhook_client_cert")]
    webhook_client_key: Option<PathBuf>,
}

/// The config file (`--config`), all members optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    grpc_addr: Option<SocketAddr>,
    #[serde(default)]
    web_addr: Option<SocketAddr>,
    #[serde(default)]
    web: Option<bool>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    heartbeat_ms: Option<u64>,
    #[serde(default)]
    tls: Option<TlsFiles>,
    #[serde(default)]
    allow_plaintext: Option<bool>,
    #[serde(default)]
    access: Option<AccessConfig>,
    #[serde(default)]
    database_url: Option<String>,
    #[serde(default)]
    metrics_addr: Option<SocketAddr>,
    #[serde(default)]
    notify: Option<NotifyConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFiles {
    cert: PathBuf,
    key: PathBuf,
    #[serde(default)]
    client_ca: Option<PathBuf>,
    #[serde(default)]
    require_client_certificate: bool,
}

/// Everything `serve` runs with, file and flags merged.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) grpc: SocketAddr,
    pub(super) web: Option<SocketAddr>,
    pub(super) name: Option<String>,
    pub(super) heartbeat: Option<Duration>,
    pub(super) tls: Option<ServiceTls>,
    pub(super) allow_plaintext: bool,
    pub(super) access: Access,
    pub(super) database_url: Option<String>,
    pub(super) metrics: Option<SocketAddr>,
    pub(super) access_files: AccessFiles,
    /// The notification channels (the config file's `notify`).
    pub(super) notify: Option<NotifyConfig>,
    /// TLS toward `https` webhook receivers (`--webhook-*`).
    pub(super) webhook_tls: UpstreamTls,
}

/// A refusal of the settings: what is wrong, never a secret.
pub(super) fn config_error(what: impl Into<String>) -> CliError {
    CliError::ApprovalsConfig(what.into())
}

fn read(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|e| config_error(format!("cannot read {}: {e}", path.display())))
}

/// Parses a JSON document without quoting it back (it may hold hashes).
fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, CliError> {
    serde_json::from_str(text).map_err(|e| {
        config_error(format!(
            "{}: not valid (line {}, column {}): {}",
            path.display(),
            e.line(),
            e.column(),
            match e.classify() {
                serde_json::error::Category::Data => "unexpected member or value",
                _ => "not JSON",
            }
        ))
    })
}

/// Where the access list comes from, read again on `SIGHUP`.
#[derive(Debug, Default)]
pub(super) struct AccessFiles {
    /// `--config`.
    config: Option<PathBuf>,
    /// `--access`, which wins over the config file's `access`.
    access: Option<PathBuf>,
}

/// The access list `files` point at: `--access FILE`, else the config
/// file's `access` (`file`); checked, with at least one approver.
fn access(files: &AccessFiles, file: Option<AccessConfig>) -> Result<Access, CliError> {
    let config = match &files.access {
        Some(path) => parse::<AccessConfig>(path, &read(path)?)?,
        None => file.unwrap_or_default(),
    };
    let access = Access::new(&config)?;
    if !access.has_approvers() {
        return Err(config_error(
            "the access list names no approver: nothing could ever be decided \
             (add one with a token from `hookwire approvals token`)",
        ));
    }
    Ok(access)
}

/// Reads the access list again from `files` (on `SIGHUP`) and puts it in
/// force, or leaves the one in force when the new one does not check out.
/// Tells which on stderr (names and reasons only: never a token or a
/// hash).
pub(super) fn reload(files: &AccessFiles, current: &Access) {
    let fresh = match &files.config {
        Some(path) => read(path)
            .and_then(|text| parse::<ConfigFile>(path, &text))
            .and_then(|file| access(files, file.access)),
        None => access(files, None),
    };
    match fresh {
        Ok(fresh) => {
            current.replace_with(&fresh);
            errln!("approval access list reloaded");
        }
        Err(e) => {
            errln!("approval access list NOT reloaded, the previous one stays in force: {e}")
        }
    }
}

/// What `serve` runs with: the config file (if any) under the flags.
pub(super) fn settings(args: &ServeArgs) -> Result<Settings, CliError> {
    let file: ConfigFile = match &args.config {
        Some(path) => parse(path, &read(path)?)?,
        None => ConfigFile::default(),
    };
    let access_files = AccessFiles {
        config: args.config.clone(),
        access: args.access.clone(),
    };
    let access = access(&access_files, file.access)?;
    let default = |addr: &str| {
        addr.parse()
            .map_err(|_| config_error("bad default address"))
    };
    let grpc = match args.grpc_addr.or(file.grpc_addr) {
        Some(a) => a,
        None => default(APPROVALS_GRPC_ADDR)?,
    };
    let web = if args.no_web || file.web == Some(false) {
        None
    } else {
        Some(match args.web_addr.or(file.web_addr) {
            Some(a) => a,
            None => default(APPROVALS_WEB_ADDR)?,
        })
    };
    let tls_files = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.client_ca.clone(),
            require_client_certificate: args.require_client_cert,
        }),
        _ => file.tls.map(|mut t| {
            if args.client_ca.is_some() {
                t.client_ca.clone_from(&args.client_ca);
            }
            t.require_client_certificate |= args.require_client_cert;
            t
        }),
    };
    if tls_files.is_none() && (args.client_ca.is_some() || args.require_client_cert) {
        return Err(config_error(
            "client certificates need TLS: give --tls-cert and --tls-key",
        ));
    }
    let tls = match tls_files {
        None => None,
        Some(t) => {
            let mut tls = ServiceTls::from_files(&t.cert, &t.key)?;
            if let Some(ca) = &t.client_ca {
                let pem = std::fs::read(ca)
                    .map_err(|e| config_error(format!("cannot read {}: {e}", ca.display())))?;
                tls = tls.client_ca(pem, t.require_client_certificate)?;
            }
            Some(tls)
        }
    };
    Ok(Settings {
        grpc,
        web,
        name: args.name.clone().or(file.name),
        heartbeat: args
            .heartbeat_ms
            .or(file.heartbeat_ms)
            .map(Duration::from_millis),
        tls,
        allow_plaintext: args.allow_plaintext || file.allow_plaintext == Some(true),
        access,
        database_url: args.database_url.clone().or(file.database_url),
        metrics: args.metrics_addr.or(file.metrics_addr),
        access_files,
        notify: file.notify,
        webhook_tls: crate::upstream_tls::load(
            args.webhook_ca.as_deref(),
            args.webhook_client_cert.as_deref(),
            args.webhook_client_key.as_deref(),
        )?,
    })
}

#[cfg(test)]
mod tests {
    use hookwire_approvals::auth::token_sha256;

    use super::*;

    fn args(extra: &[&str]) -> ServeArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let mut argv = vec!["serve"];
        argv.extend_from_slice(extra);
        Wrap::parse_from(argv).serve
    }

    #[test]
    fn a_config_file_and_flags_merge_and_refusals_name_no_secret() {
        let dir = tempfile::tempdir().unwrap();
        let token = "hwa_secret_token_for_this_test_0123456789";
        let config = dir.path().join("approvals.json");
        std::fs::write(
            &config,
            serde_json::json!({
                "grpc_addr": "127.0.0.1:0",
                "web": false,
                "access": {"approvers": [{"name": "ann", "token_sha256": token_sha256(token)}]}
            })
            .to_string(),
        )
        .unwrap();
        let c = config.to_str().unwrap();
        let s = settings(&args(&["--config", c])).unwrap();
        assert_eq!((s.grpc.port(), s.web), (0, None));
        let s = settings(&args(&["--config", c, "--grpc-addr", "127.0.0.1:7"])).unwrap();
        assert_eq!(s.grpc.port(), 7);

        // No approver: refused.
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, r#"{"access": {"hosts": []}}"#).unwrap();
        let e = settings(&args(&["--config", empty.to_str().unwrap()])).unwrap_err();
        assert!(e.to_string().contains("names no approver"), "{e}");

        // A malformed file: the error names the place, not the content.
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, format!(r#"{{"access": {{"approvers": "{token}"}}}}"#)).unwrap();
        let e = settings(&args(&["--config", bad.to_str().unwrap()])).unwrap_err();
        assert!(!e.to_string().contains(token), "{e}");
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
