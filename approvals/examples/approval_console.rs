//! A terminal approval console: an approver on the `Watch` stream of a
//! hookwire approval service.
//!
//! It prints each request as it arrives (point, tool, arguments as the
//! host's redactor left them, reason, time left) and every change (seen,
//! resolved by someone, expired, withdrawn), and reads one command per
//! line:
//!
//! ```text
//! list                    pending requests, numbered
//! show <n|id>             the whole context and the offered deny
//! approve <n|id> [note]   lift the deny (allow)
//! edit <n|id> <json>      approve with edited arguments: a transform of
//!                         $target to <json>
//! reject <n|id> [reason]  let the deny stand
//! wait [count] [secs]     wait until <count> requests are pending (1, 30)
//! help, quit
//! ```
//!
//! `<n>` is the number `list` shows; `<id>` the service's id (`q-7`). It
//! reads commands from stdin, so it scripts as well as it types.
//!
//! The console authenticates as an approver with the token its operator
//! issued (read from a file or `HOOKWIRE_APPROVER_TOKEN`, never from the
//! command line) and/or a client certificate; the name on its decisions is
//! the one the service has for that credential. Over `https://` it
//! verifies the service against `--ca`:
//!
//! ```text
//! printf 'wait\nlist\napprove 1 looks fine\n' | \
//!   cargo run -p hookwire-approvals --example approval_console -- --endpoint https://approvals.internal:50061 \
//!     --ca ca.pem --token-file ~/.hookwire/approver-token
//! ```

use std::collections::BTreeMap;
use std::error::Error;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookwire::Verdict;
use hookwire::approval::{ApprovalOutcome, ApprovalResolution, StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire::pb::approval_service_client::ApprovalServiceClient;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

/// Where the console writes; shared by the command loop and the event
/// printer.
pub type Output = Arc<Mutex<dyn Write + Send>>;

/// Largest message the console accepts from the service: what the service
/// may send, no more; a larger one ends the console's stream.
const MAX_MESSAGE_BYTES: usize = hookwire_approvals::MAX_APPROVAL_REPLY_BYTES;

/// How the console reaches and authenticates to the service.
#[derive(Clone, Default)]
pub struct Connection {
    /// `http://` or `https://` URL of the approval service.
    pub endpoint: String,
    /// The approver's bearer token.
    pub token: Option<String>,
    /// PEM authority that signs the service's certificate (`https://`).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate and key, for a service that authenticates
    /// approvers by mutual TLS.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The name the service's certificate carries, when it differs from
    /// the endpoint's host.
    pub domain_name: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token or the key.
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// The service at `endpoint`, as the approver holding `token`.
    pub fn new(endpoint: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            token: Some(token.into()),
            ..Self::default()
        }
    }

    async fn client(
        &self,
    ) -> Result<ApprovalServiceClient<tonic::transport::Channel>, Box<dyn Error + Send + Sync>>
    {
        let mut endpoint = tonic::transport::Endpoint::from_shared(self.endpoint.clone())?;
        if endpoint.uri().scheme_str() == Some("https") {
            let mut tls = tonic::transport::ClientTlsConfig::new();
            tls = match &self.ca_pem {
                Some(ca) => tls.ca_certificate(tonic::transport::Certificate::from_pem(ca)),
                None => tls.with_webpki_roots(),
            };
            if let Some((cert, key)) = &self.client_identity {
                tls = tls.identity(tonic::transport::Identity::from_pem(cert, key));
            }
            if let Some(name) = &self.domain_name {
                tls = tls.domain_name(name.clone());
            }
            endpoint = endpoint.tls_config(tls)?;
        }
        let channel = endpoint.connect().await?;
        Ok(ApprovalServiceClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES))
    }

    /// `message` with the approver's credential.
    fn request<T>(&self, message: T) -> Result<tonic::Request<T>, Box<dyn Error + Send + Sync>> {
        let mut request = tonic::Request::new(message);
        if let Some(token) = &self.token {
            let mut value: tonic::metadata::MetadataValue<_> = format!("Bearer {token}")
                .parse()
                .map_err(|_| "the token is not a valid header value")?;
            value.set_sensitive(true);
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

/// A pending request as the console keeps it.
#[derive(Debug, Clone)]
struct Pending {
    seq: u64,
    request: StreamRequest,
    context: Value,
    host: String,
    seen_by: Vec<String>,
    deadline: Instant,
}

impl Pending {
    /// A pending request from the wire; one that does not decode (the
    /// service checked it on the way in) is not shown.
    fn from_pb(seq: u64, p: pb::PendingApproval) -> Option<(String, Self)> {
        let request = StreamRequest::try_from(p.request?).ok()?;
        let context = request.request.context.to_json();
        // Whatever the wire says, a day is more than any approver needs.
        let left = request.deadline.min(Duration::from_secs(86_400));
        let deadline = Instant::now() + left;
        Some((
            request.request_id.clone(),
            Self {
                seq,
                request,
                context,
                host: p.host,
                seen_by: p.seen_by,
                deadline,
            },
        ))
    }

    fn point(&self) -> String {
        self.context["interception_point"]
            .as_str()
            .unwrap_or("?")
            .to_owned()
    }

    fn tool(&self) -> &str {
        self.context["tool_call"]["name"].as_str().unwrap_or("-")
    }

    fn target(&self) -> String {
        match self.context.get("target") {
            Some(t) => t.to_string(),
            None => "-".into(),
        }
    }

    fn reason(&self) -> String {
        let v = &self.request.request.verdict;
        let reason = v.reason.clone().unwrap_or_default();
        match v.message.clone() {
            Some(m) if !reason.is_empty() => format!("{reason}: {m}"),
            Some(m) => m,
            None => reason,
        }
    }

    fn left(&self) -> String {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let s = left.as_secs();
        if left.is_zero() {
            "expired".into()
        } else if s >= 60 {
            format!("{}m{:02}s left", s / 60, s % 60)
        } else {
            format!("{s}s left")
        }
    }

    fn line(&self, id: &str) -> String {
        let seen = if self.seen_by.is_empty() {
            String::new()
        } else {
            format!("  seen by {}", self.seen_by.join(", "))
        };
        format!(
            "{id}  {}  {}  args {}  reason {}  {}  from {}{seen}",
            self.point(),
            self.tool(),
            self.target(),
            self.reason(),
            self.left(),
            self.host
        )
    }
}

/// What the console knows, kept current by the event task.
#[derive(Default)]
struct Board {
    next: u64,
    pending: BTreeMap<String, Pending>,
}

impl Board {
    fn ordered(&self) -> Vec<(&String, &Pending)> {
        let mut v: Vec<_> = self.pending.iter().collect();
        v.sort_by_key(|(_, p)| p.seq);
        v
    }

    /// A request by its number in `list` or by its id.
    fn find(&self, key: &str) -> Option<(String, Pending)> {
        if let Some(p) = self.pending.get(key) {
            return Some((key.to_owned(), p.clone()));
        }
        let n: usize = key.parse().ok()?;
        self.ordered()
            .get(n.checked_sub(1)?)
            .map(|(id, p)| ((*id).clone(), (*p).clone()))
    }

    fn add(&mut self, p: pb::PendingApproval) -> Option<String> {
        self.next += 1;
        let (id, p) = Pending::from_pb(self.next, p)?;
        let line = p.line(&id);
        self.pending.insert(id, p);
        Some(line)
    }
}

fn say(out: &Output, line: impl AsRef<str>) {
    if let Ok(mut w) = out.lock() {
        let _ = writeln!(w, "{}", line.as_ref());
        let _ = w.flush();
    }
}

fn outcome_name(o: i32) -> &'static str {
    let outcome = pb::ApprovalOutcome::try_from(o).ok().and_then(Option::from);
    match outcome {
        Some(ApprovalOutcome::Approve) => "approved",
        Some(ApprovalOutcome::Reject) => "rejected",
        Some(ApprovalOutcome::Unresolved) => "left unresolved",
        None => "answered without an outcome",
    }
}

fn status_name(s: i32) -> &'static str {
    match pb::DecisionStatus::try_from(s) {
        Ok(pb::DecisionStatus::Accepted) => "accepted",
        Ok(pb::DecisionStatus::UnknownRequest) => "refused: unknown request",
        Ok(pb::DecisionStatus::AlreadyResolved) => "refused: already resolved",
        Ok(pb::DecisionStatus::Expired) => "refused: expired",
        Ok(pb::DecisionStatus::Withdrawn) => "refused: withdrawn",
        _ => "refused",
    }
}

fn close_name(r: i32) -> &'static str {
    match pb::CloseReason::try_from(r) {
        Ok(pb::CloseReason::Expired) => "expired",
        Ok(pb::CloseReason::Cancelled) => "withdrawn by its host",
        Ok(pb::CloseReason::HostGone) => "withdrawn: its host disconnected",
        Ok(pb::CloseReason::Failed) => "failed by the service",
        _ => "closed",
    }
}

/// Applies one event to the board and prints it; returns an ack, if any.
fn apply(
    board: &Mutex<Board>,
    out: &Output,
    event: pb::watch_event::Kind,
) -> Option<pb::DecisionAck> {
    use pb::watch_event::Kind;
    let Ok(mut b) = board.lock() else {
        return None;
    };
    match event {
        Kind::Pending(set) => {
            b.pending.clear();
            for p in set.requests {
                b.add(p);
            }
            say(out, format!("{} pending", b.pending.len()));
        }
        Kind::Added(p) => {
            if let Some(line) = b.add(p) {
                say(out, format!("+ {line}"));
            }
        }
        Kind::Seen(s) => {
            if let Some(p) = b.pending.get_mut(&s.request_id)
                && !p.seen_by.contains(&s.approver)
            {
                p.seen_by.push(s.approver.clone());
                say(out, format!("  {} seen by {}", s.request_id, s.approver));
            }
        }
        Kind::Resolved(r) => {
            b.pending.remove(&r.request_id);
            say(
                out,
                format!(
                    "* {} {} by {}",
                    r.request_id,
                    outcome_name(r.outcome),
                    r.approver
                ),
            );
        }
        Kind::Closed(c) => {
            b.pending.remove(&c.request_id);
            say(out, format!("- {} {}", c.request_id, close_name(c.reason)));
        }
        Kind::Ack(a) => {
            // Ours won: it is no longer pending, whatever comes next.
            if a.status == pb::DecisionStatus::Accepted as i32 {
                b.pending.remove(&a.request_id);
            }
            return Some(a);
        }
        Kind::Ready(_) | Kind::Heartbeat(_) => {}
    }
    None
}

const HELP: &str = "commands: list | show <n|id> | approve <n|id> [note] | edit <n|id> <json> | reject <n|id> [reason] | wait [count] [secs] | quit";

/// Runs the console against the service `connection` names, reading
/// commands from `input` until `quit` or its end.
pub async fn run(
    connection: &Connection,
    input: impl AsyncBufRead + Unpin,
    out: Output,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let endpoint = &connection.endpoint;
    let mut client = connection.client().await?;
    let (up, rx) = mpsc::channel::<pb::ApproverMessage>(32);
    let send = |kind| pb::ApproverMessage { kind: Some(kind) };
    let request = connection.request(ReceiverStream::new(rx))?;
    let mut down = match client.watch(request).await {
        Ok(r) => r.into_inner(),
        Err(status) if status.code() == tonic::Code::Unauthenticated => {
            return Err("the service did not accept this approver's credential".into());
        }
        Err(status) if status.code() == tonic::Code::PermissionDenied => {
            return Err("this credential may not approve".into());
        }
        Err(status) => return Err(status.into()),
    };
    say(&out, format!("connected to {endpoint}"));

    let board = Arc::new(Mutex::new(Board::default()));
    let (acks_tx, mut acks) = mpsc::channel::<pb::DecisionAck>(8);
    // Bumped on every change, for `wait`.
    let (changed, _) = watch::channel(0u64);
    let events = tokio::spawn({
        let (board, out, changed) = (Arc::clone(&board), Arc::clone(&out), changed.clone());
        async move {
            while let Ok(Some(e)) = down.message().await {
                if let Some(kind) = e.kind
                    && let Some(ack) = apply(&board, &out, kind)
                {
                    let _ = acks_tx.send(ack).await;
                }
                changed.send_modify(|n| *n += 1);
            }
            say(&out, "the approval service closed the stream");
        }
    });

    let mut lines = input.lines();
    while let Some(line) = lines.next_line().await? {
        let line = line.trim();
        let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        match command {
            "" | "#" => {}
            c if c.starts_with('#') => {}
            "help" | "?" => say(&out, HELP),
            "quit" | "exit" => break,
            "list" | "ls" => {
                let text = match board.lock() {
                    Ok(b) if b.pending.is_empty() => vec!["nothing pending".to_owned()],
                    Ok(b) => b
                        .ordered()
                        .iter()
                        .enumerate()
                        .map(|(i, (id, p))| format!("[{}] {}", i + 1, p.line(id)))
                        .collect(),
                    Err(_) => vec![],
                };
                for l in text {
                    say(&out, l);
                }
            }
            "wait" => {
                let mut args = rest.split_whitespace();
                let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
                let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
                let mut rx = changed.subscribe();
                let enough = |b: &Arc<Mutex<Board>>| {
                    b.lock().map(|b| b.pending.len() >= count).unwrap_or(false)
                };
                let waited = tokio::time::timeout(Duration::from_secs(secs), async {
                    while !enough(&board) {
                        if rx.changed().await.is_err() {
                            break;
                        }
                    }
                })
                .await;
                if waited.is_err() || !enough(&board) {
                    say(&out, format!("timed out waiting for {count} pending"));
                }
            }
            "show" => match board.lock().ok().and_then(|b| b.find(rest)) {
                None => say(&out, format!("no pending request {rest:?}")),
                Some((id, p)) => {
                    say(&out, p.line(&id));
                    say(
                        &out,
                        format!(
                            "identity {}",
                            p.request
                                .request
                                .context_identity
                                .as_deref()
                                .unwrap_or("null")
                        ),
                    );
                    say(
                        &out,
                        serde_json::to_string_pretty(&p.context).unwrap_or_default(),
                    );
                }
            },
            "approve" | "reject" | "edit" => {
                let (key, arg) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let arg = arg.trim();
                let Some((id, p)) = board.lock().ok().and_then(|b| b.find(key)) else {
                    say(&out, format!("no pending request {key:?}"));
                    continue;
                };
                let (outcome, verdict) = match command {
                    "approve" => {
                        let mut v = Verdict::allow();
                        v.message = (!arg.is_empty()).then(|| arg.to_owned());
                        (ApprovalOutcome::Approve, v)
                    }
                    "edit" => match serde_json::from_str::<Value>(arg) {
                        Ok(args) => (
                            ApprovalOutcome::Approve,
                            Verdict::transform("$target", args),
                        ),
                        Err(e) => {
                            say(&out, format!("edit: not JSON: {e}"));
                            continue;
                        }
                    },
                    _ => {
                        let reason = if arg.is_empty() {
                            "approval:rejected"
                        } else {
                            arg
                        };
                        (
                            ApprovalOutcome::Reject,
                            Verdict::deny(reason).with_message("rejected at the approval console"),
                        )
                    }
                };
                let decision = pb::ApprovalResolution::from(&StreamResolution {
                    request_id: id.clone(),
                    approver: String::new(),
                    resolution: ApprovalResolution {
                        outcome: Some(outcome),
                        context_identity: p.request.request.context_identity.clone(),
                        verdict: Some(verdict),
                    },
                });
                up.send(send(pb::approver_message::Kind::Decide(decision)))
                    .await?;
                match tokio::time::timeout(Duration::from_secs(10), acks.recv()).await {
                    Ok(Some(ack)) => say(
                        &out,
                        format!("{} {}", ack.request_id, status_name(ack.status)),
                    ),
                    _ => say(&out, format!("{id}: no answer from the service")),
                }
            }
            other => say(&out, format!("unknown command {other:?}; {HELP}")),
        }
    }
    events.abort();
    Ok(())
}

/// Decide pending approvals of a hookwire approval service from a
/// terminal (commands on stdin; `help` lists them).
#[derive(Debug, clap::Parser)]
#[command(
    name = "approval_console",
    after_help = "The approver token comes from --token-file or $HOOKWIRE_APPROVER_TOKEN, never the command line.\n\nExample:\n  printf 'wait\\nlist\\napprove 1 looks fine\\n' | \\\n    cargo run -p hookwire-approvals --example approval_console -- \\\n      --endpoint https://approvals.internal:50061 --ca ca.pem --token-file ~/.hookwire/approver-token"
)]
struct Args {
    /// The approval service's `http://` or `https://` URL.
    #[arg(long, default_value = "http://127.0.0.1:50061", value_name = "URL")]
    endpoint: String,
    /// File holding the approver's token.
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// PEM authority that signs the service's certificate (`https://`).
    #[arg(long, value_name = "FILE")]
    ca: Option<std::path::PathBuf>,
    /// PEM client certificate, for a service that authenticates approvers
    /// by mutual TLS (with `--key`).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<std::path::PathBuf>,
    /// PEM key of `--cert`.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<std::path::PathBuf>,
    /// The name the service's certificate carries, when it differs from
    /// the endpoint's host.
    #[arg(long, value_name = "NAME")]
    domain: Option<String>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = <Args as clap::Parser>::parse();
    match console(args).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("approval_console: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Connects as `args` say and runs the console on stdin and stdout.
async fn console(args: Args) -> Result<(), Box<dyn Error + Send + Sync>> {
    let read = |path: &std::path::Path| -> Result<Vec<u8>, Box<dyn Error + Send + Sync>> {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()).into())
    };
    let token = match &args.token_file {
        Some(path) => Some(String::from_utf8(read(path)?)?.trim().to_owned()),
        None => std::env::var("HOOKWIRE_APPROVER_TOKEN").ok(),
    };
    let c = Connection {
        endpoint: args.endpoint,
        token,
        ca_pem: args.ca.as_deref().map(read).transpose()?,
        client_identity: match (&args.cert, &args.key) {
            (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
            _ => None,
        },
        domain_name: args.domain,
    };
    let out: Output = Arc::new(Mutex::new(std::io::stdout()));
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    run(&c, stdin, out).await
}
