//! `policy serve`'s operator flags, as OPA operators know them: where the
//! policies come from when not a directory (a bundle file or URL, its
//! polling and signature key), the decision log (where it goes, what of the
//! input it carries, its buffer), TLS and client authentication, and the
//! OTLP export the decision log may use. Each turns into the policy
//! service's raw settings here (`hookwire_policy::settings`).

use std::path::PathBuf;
use std::time::Duration;

use hookwire_policy::PolicyOptions;
use hookwire_policy::bundle::{BundleLimits, BundleOptions, Verification};
use hookwire_policy::decision_log::{DEFAULT_BUFFER, LogWriter};
use hookwire_policy::settings::{DecisionLogSink, RawDecisionLog};
use hookwire_telemetry::{OtlpEventLogger, Telemetry};
use serde_json::Value;

use crate::args::TelemetryArgs;
use crate::error::CliError;
use crate::server_tls::ServerTlsArgs;

/// The operator flags of `policy serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct OpsArgs {
    #[command(flatten)]
    pub(crate) bundle: BundleArgs,
    #[command(flatten)]
    pub(crate) log: DecisionLogArgs,
    #[command(flatten)]
    pub(crate) tls: ServerTlsArgs,
    #[command(flatten)]
    pub(crate) telemetry: TelemetryArgs,
}

/// Where a bundle comes from and how it is checked.
#[derive(Debug, clap::Args)]
pub(crate) struct BundleArgs {
    /// Serve the policies of an OPA bundle (`.tar.gz`: `.manifest`,
    /// modules, `data.json`) from this file or `http(s)://` URL instead of
    /// a directory; it is polled, and a bundle that fails to download,
    /// verify or compile leaves the serving one in place.
    #[arg(long, value_name = "PATH|URL", conflicts_with = "dir")]
    pub(crate) bundle: Option<String>,
    /// How often the bundle is polled (a URL with its ETag).
    #[arg(long, default_value_t = 30_000, value_name = "MS", requires = "bundle")]
    pub(crate) bundle_poll_ms: u64,
    /// Bound of one bundle download.
    #[arg(long, default_value_t = 30_000, value_name = "MS", requires = "bundle")]
    pub(crate) bundle_timeout_ms: u64,
    /// Largest bundle archive accepted, in bytes.
    #[arg(long, default_value_t = 16 << 20, value_name = "BYTES", requires = "bundle")]
    pub(crate) bundle_max_bytes: usize,
    /// PEM authority an `https://` bundle server's certificate must chain
    /// to (instead of the public roots).
    #[arg(long, value_name = "FILE", requires = "bundle")]
    pub(crate) bundle_ca: Option<PathBuf>,
    /// PEM public key bundles must be signed with (OPA's
    /// `.signatures.json`); without it a signed bundle is refused.
    #[arg(long, value_name = "FILE", requires = "bundle")]
    pub(crate) bundle_verification_key: Option<PathBuf>,
    /// The signature's algorithm: RS256, ES256 or EdDSA.
    #[arg(
        long,
        default_value = "RS256",
        value_name = "ALG",
        requires = "bundle_verification_key"
    )]
    pub(crate) bundle_signing_alg: String,
    /// The scope a signature must carry.
    #[arg(long, value_name = "SCOPE", requires = "bundle_verification_key")]
    pub(crate) bundle_scope: Option<String>,
}

impl BundleArgs {
    /// The bundle options, the key read and checked.
    pub(crate) fn options(&self, policy: PolicyOptions) -> Result<BundleOptions, CliError> {
        let verification = match &self.bundle_verification_key {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    CliError::PolicyServe(format!("cannot read {}: {e}", path.display()))
                })?;
                Some(
                    Verification::from_pem(
                        &pem,
                        &self.bundle_signing_alg,
                        self.bundle_scope.clone(),
                    )
                    .map_err(|e| CliError::PolicyServe(format!("{}: {e}", path.display())))?,
                )
            }
        };
        let ca_pem = match &self.bundle_ca {
            None => None,
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                CliError::PolicyServe(format!("cannot read {}: {e}", path.display()))
            })?),
        };
        let limits = BundleLimits {
            max_archive_bytes: self.bundle_max_bytes.max(1),
            ..BundleLimits::default()
        };
        Ok(BundleOptions {
            verification,
            limits,
            timeout: Duration::from_millis(self.bundle_timeout_ms.max(1)),
            ca_pem,
            policy,
        })
    }
}

/// The decision log's flags.
#[derive(Debug, clap::Args)]
pub(crate) struct DecisionLogArgs {
    /// Log every decision (id, time, point, agent, session, sequence,
    /// context digest, packages and their rules, decision, reason; no
    /// payload) as JSON: `stdout`, `file:PATH` (JSON lines, appended) or
    /// `otlp` (log records to `--otlp-endpoint`).
    #[arg(long, value_name = "SINK", value_parser = parse_sink)]
    pub(crate) decision_log: Option<Sink>,
    /// Also log this part of each context, a `/`-separated path such as
    /// `/tool_call/name` (repeatable). Nothing of the payload is logged
    /// without it.
    #[arg(long, value_name = "PATH", requires = "decision_log")]
    pub(crate) decision_log_include: Vec<String>,
    /// Remove this path from what `--decision-log-include` logs, e.g.
    /// `/tool_call/args/password` (repeatable).
    #[arg(long, value_name = "PATH", requires = "decision_log_include")]
    pub(crate) decision_log_mask: Vec<String>,
    /// Entries held before new ones are dropped (and counted) while the
    /// sink is slow.
    #[arg(long, default_value_t = DEFAULT_BUFFER, value_name = "N", requires = "decision_log")]
    pub(crate) decision_log_buffer: usize,
}

/// Where decision log entries go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sink {
    Stdout,
    File(PathBuf),
    Otlp,
}

fn parse_sink(s: &str) -> Result<Sink, String> {
    match s {
        "stdout" => Ok(Sink::Stdout),
        "otlp" => Ok(Sink::Otlp),
        _ => match s.strip_prefix("file:") {
            Some(path) if !path.is_empty() => Ok(Sink::File(PathBuf::from(path))),
            _ => Err("one of stdout, file:PATH, otlp".into()),
        },
    }
}

/// Decision log entries as OTLP log records (`hookwire.policy_decision`).
struct OtlpWriter(OtlpEventLogger);

impl LogWriter for OtlpWriter {
    fn write_entry(&mut self, entry: &Value) -> std::io::Result<()> {
        self.0.emit("hookwire.policy_decision", entry);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl DecisionLogArgs {
    /// The decision log asked for, or `None`; `otlp` needs `telemetry`.
    pub(crate) fn raw(
        &self,
        telemetry: Option<&Telemetry>,
    ) -> Result<Option<RawDecisionLog>, CliError> {
        let Some(sink) = &self.decision_log else {
            return Ok(None);
        };
        let sink = match sink {
            Sink::Stdout => DecisionLogSink::Stdout,
            Sink::File(path) => DecisionLogSink::File(path.clone()),
            Sink::Otlp => {
                let telemetry = telemetry.ok_or_else(|| {
                    CliError::PolicyServe("--decision-log otlp needs --otlp-endpoint".into())
                })?;
                DecisionLogSink::Writer(Box::new(OtlpWriter(telemetry.event_logger())))
            }
        };
        Ok(Some(RawDecisionLog {
            sink,
            include: self.decision_log_include.clone(),
            mask: self.decision_log_mask.clone(),
            buffer: self.decision_log_buffer,
        }))
    }
}
