//! `hookwire approvals list|show|approve|reject`: an approver's commands
//! over the service's public approver API (docs/approver-api.md). `list`
//! and `show` read the first `PendingSet` of a `Watch` stream (what the
//! approver's rules cover, nothing more); `approve` and `reject` find the
//! request there, echo its `context_identity` and send one `Decide`.
//!
//! The approver authenticates with the token its operator issued, read
//! from `--token-file` or `HOOKWIRE_APPROVER_TOKEN` (never the command
//! line), and/or a client certificate; over `https://` the service is
//! verified against `--ca` (or the web roots). Every call is bounded by
//! `--timeout-secs`. Each refusal is an error saying what to do; `--json`
//! prints machine-readable answers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookwire::Verdict;
use hookwire::approval::{ApprovalOutcome, ApprovalResolution, StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use serde_json::{Value, json};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::CliError;

/// The reason code of a rejection from the command line; the operator's
/// `--reason` travels as the deny's message.
pub(crate) const REJECT_REASON: &str = "approval:rejected";

/// Largest message read from or sent to the service.
const MAX_MESSAGE_BYTES: usize = hookwire_approvals::MAX_APPROVAL_REPLY_BYTES;

/// Largest `--edit` file read.
const MAX_EDIT_BYTES: u64 = 1024 * 1024;

/// Longest `--note` or `--reason` kept.
const MAX_NOTE_CHARS: usize = 1024;

/// How an approver command reaches and authenticates to the service.
#[derive(Debug, clap::Args)]
pub(crate) struct ConnectArgs {
    /// The approval service's gRPC URL.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50061")]
    endpoint: String,
    /// File holding the approver's token (else `HOOKWIRE_APPROVER_TOKEN`).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// PEM authority of the service's certificate (`https://`; default:
    /// the web roots).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// PEM client certificate, for a service that authenticates approvers
    /// by mutual TLS (with `--client-key`).
    #[arg(long, value_name = "FILE", requires = "client_key")]
    client_cert: Option<PathBuf>,
    /// PEM key of `--client-cert`.
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    client_key: Option<PathBuf>,
    /// The name the service's certificate carries, when it is not the
    /// endpoint's host.
    #[arg(long, value_name = "NAME")]
    domain: Option<String>,
    /// Give up on the service after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    timeout_secs: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

fn fail(what: impl Into<String>) -> CliError {
    CliError::ApprovalsClient(what.into())
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| fail(format!("cannot read {what} {}: {e}", path.display())))
}

/// A connected approver.
pub(crate) struct Approver {
    client: ApprovalServiceClient<Channel>,
    token: Option<String>,
    timeout: Duration,
}

impl ConnectArgs {
    /// Connects to the service (nothing is authenticated until a call).
    pub(crate) async fn connect(&self) -> Result<Approver, CliError> {
        let token = match &self.token_file {
            Some(path) => Some(
                String::from_utf8(read(path, "--token-file")?)
                    .map_err(|_| fail(format!("{} is not UTF-8", path.display())))?
                    .trim()
                    .to_owned(),
            ),
            None => std::env::var("HOOKWIRE_APPROVER_TOKEN").ok(),
        };
        if token.is_none() && self.client_cert.is_none() {
            return Err(fail(
                "no credential: give --token-file FILE (or set HOOKWIRE_APPROVER_TOKEN), \
                 or --client-cert and --client-key",
            ));
        }
        let timeout = Duration::from_secs(self.timeout_secs.clamp(1, 3600));
        let mut endpoint = Endpoint::from_shared(self.endpoint.clone())
            .map_err(|_| fail(format!("--endpoint {:?} is not a URL", self.endpoint)))?
            .connect_timeout(timeout)
            .timeout(timeout);
        if endpoint.uri().scheme_str() == Some("https") {
            let mut tls = match &self.ca {
                Some(ca) => {
                    ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca, "--ca")?))
                }
                None => ClientTlsConfig::new().with_webpki_roots(),
            };
            if let (Some(cert), Some(key)) = (&self.client_cert, &self.client_key) {
                tls = tls.identity(Identity::from_pem(
                    read(cert, "--client-cert")?,
                    read(key, "--client-key")?,
                ));
            }
            if let Some(name) = &self.domain {
                tls = tls.domain_name(name.clone());
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| fail(format!("TLS settings refused: {e}")))?;
        } else if self.ca.is_some() || self.client_cert.is_some() {
            return Err(fail("--ca and --client-cert need an https:// --endpoint"));
        }
        let channel = endpoint.connect().await.map_err(|e| {
            fail(format!(
                "cannot reach the approval service at {}: {e} (is `hookwire approvals serve` running there?)",
                self.endpoint
            ))
        })?;
        Ok(Approver {
            client: ApprovalServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            token,
            timeout,
        })
    }
}

/// What a refused call means for the approver.
fn refused(status: &tonic::Status) -> CliError {
    match status.code() {
        tonic::Code::Unauthenticated => fail(
            "the service did not accept this credential (unknown, expired or revoked token): \
             check --token-file, or ask the operator for a new token",
        ),
        tonic::Code::PermissionDenied => fail(format!(
            "refused: {} (this credential is not an approver, or the request is outside its rules)",
            status.message()
        )),
        tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
            fail("the approval service did not answer in time (--timeout-secs)")
        }
        _ => fail(format!("the approval service failed: {}", status.message())),
    }
}

/// A pending request as the approver is shown it.
pub(crate) struct Shown {
    pub(crate) request: StreamRequest,
    pub(crate) host: String,
    pub(crate) seen_by: Vec<String>,
}

impl Approver {
    fn call<T>(&self, message: T) -> Result<tonic::Request<T>, CliError> {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.timeout);
        if let Some(token) = &self.token {
            let mut value: tonic::metadata::MetadataValue<_> = format!("Bearer {token}")
                .parse()
                .map_err(|_| fail("the token is not a valid header value"))?;
            value.set_sensitive(true);
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }

    /// The pending requests the approver's rules cover, oldest first: the
    /// first `PendingSet` of a `Watch` stream, which then ends.
    pub(crate) async fn pending(&mut self) -> Result<Vec<Shown>, CliError> {
        let request = self.call(futures::stream::empty::<pb::ApproverMessage>())?;
        let timeout = self.timeout;
        let read = async {
            let mut down = self
                .client
                .watch(request)
                .await
                .map_err(|s| refused(&s))?
                .into_inner();
            loop {
                match down.message().await.map_err(|s| refused(&s))? {
                    Some(pb::WatchEvent {
                        kind: Some(pb::watch_event::Kind::Pending(set)),
                    }) => {
                        return Ok(set);
                    }
                    Some(_) => {}
                    None => {
                        return Err(fail(
                            "the approval service ended the stream before the pending set",
                        ));
                    }
                }
            }
        };
        let set = tokio::time::timeout(timeout, read)
            .await
            .map_err(|_| fail("the approval service did not answer in time (--timeout-secs)"))??;
        Ok(set
            .requests
            .into_iter()
            .filter_map(|p| {
                Some(Shown {
                    request: StreamRequest::try_from(p.request?).ok()?,
                    host: p.host,
                    seen_by: p.seen_by,
                })
            })
            .collect())
    }

    /// The pending request `id`, or an error saying it is not pending.
    pub(crate) async fn find(&mut self, id: &str) -> Result<Shown, CliError> {
        self.pending()
            .await?
            .into_iter()
            .find(|s| s.request.request_id == id)
            .ok_or_else(|| {
                fail(format!(
                    "no pending request {id:?} that this approver may see: it was decided, \
                     expired or withdrawn, or is outside its rules (see `hookwire approvals list`)"
                ))
            })
    }

    /// Sends one decision about `shown`; `Ok` once the service accepted
    /// it as the first.
    pub(crate) async fn decide(
        &mut self,
        shown: &Shown,
        outcome: ApprovalOutcome,
        verdict: Verdict,
    ) -> Result<(), CliError> {
        let id = shown.request.request_id.clone();
        let resolution = pb::ApprovalResolution::from(&StreamResolution {
            request_id: id.clone(),
            approver: String::new(),
            resolution: ApprovalResolution {
                outcome: Some(outcome),
                context_identity: shown.request.request.context_identity.clone(),
                verdict: Some(verdict),
            },
        });
        let call = self.call(pb::DecideRequest {
            approver: String::new(),
            resolution: Some(resolution),
        })?;
        let status = self
            .client
            .decide(call)
            .await
            .map_err(|s| refused(&s))?
            .into_inner()
            .status;
        match pb::DecisionStatus::try_from(status) {
            Ok(pb::DecisionStatus::Accepted) => Ok(()),
            Ok(pb::DecisionStatus::AlreadyResolved) => Err(fail(format!(
                "{id} was already decided by someone else; yours did not count"
            ))),
            Ok(pb::DecisionStatus::Expired) => {
                Err(fail(format!("{id} expired before the decision arrived")))
            }
            Ok(pb::DecisionStatus::Withdrawn) => {
                Err(fail(format!("{id} was withdrawn by its host")))
            }
            Ok(pb::DecisionStatus::UnknownRequest) => {
                Err(fail(format!("{id} is not pending here")))
            }
            _ => Err(fail(format!(
                "{id}: the service answered an unknown status {status}"
            ))),
        }
    }
}

/// A note or reason, trimmed and bounded.
pub(crate) fn note(text: &str) -> String {
    text.trim().chars().take(MAX_NOTE_CHARS).collect()
}

/// The edited target in `path` (JSON), for `approve --edit`.
pub(crate) fn edited(path: &Path) -> Result<Value, CliError> {
    let len = std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read --edit {}: {e}", path.display())))?
        .len();
    if len > MAX_EDIT_BYTES {
        return Err(fail(format!(
            "--edit {} is over {MAX_EDIT_BYTES} bytes",
            path.display()
        )));
    }
    serde_json::from_slice(&read(path, "--edit")?).map_err(|e| {
        fail(format!(
            "--edit {} is not JSON (line {}, column {})",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// One request as `list --json` and `show --json` print it (`show` adds
/// the context).
pub(crate) fn view(s: &Shown, with_context: bool) -> Value {
    let r = &s.request.request;
    let ctx = r.context.to_json();
    let id_of = |m: &str| {
        ctx.get(m)
            .and_then(|v| v.get("id"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut v = json!({
        "id": s.request.request_id,
        "host": s.host,
        "point": r.interception_point.to_string(),
        "tool": r.context.tool_name(),
        "agent": id_of("agent"),
        "tenant": id_of("tenant"),
        "session": r.context.session_id(),
        "reason": r.verdict.reason,
        "message": r.verdict.message,
        "approval": r.verdict.approval,
        "target": r.context.target(),
        "remaining_ms": u64::try_from(s.request.deadline.as_millis()).unwrap_or(u64::MAX),
        "seen_by": s.seen_by,
        "context_identity": r.context_identity,
    });
    if with_context {
        v["context"] = ctx;
    }
    v
}

/// One line of `list`.
pub(crate) fn line(s: &Shown) -> String {
    let v = view(s, false);
    let text = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
    let secs = s.request.deadline.as_secs();
    format!(
        "{}  {}  {}  agent {}  tenant {}  reason {}  {}m{:02}s left  from {}",
        text("id"),
        text("point"),
        text("tool"),
        text("agent"),
        text("tenant"),
        text("reason"),
        secs / 60,
        secs % 60,
        text("host"),
    )
}
