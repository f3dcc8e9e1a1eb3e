//! `hookwire approvals`: the approval service as a shipped command (see
//! `docs/approvals.md`).
//!
//! - `serve` runs `hookwire.v1.ApprovalService` (hosts' `Resolve`
//!   streams, approvers' `Watch` and `Decide`) and the approval web page,
//!   over one queue, behind an access list of hosts and approvers, over
//!   TLS when given a certificate. Settings come from a JSON file
//!   (`--config`) and/or flags; a flag wins over the file. `--metrics-addr`
//!   serves its Prometheus series; `SIGHUP` reloads the access list
//!   (checked first; a refused one leaves the list in force); `SIGINT` or
//!   `SIGTERM` shut it down gracefully (a shared queue's hosts are
//!   detached, for them to re-attach on another instance).
//! - `token` prints a fresh approver or host token and the SHA-256 hash
//!   that goes into the access list: the service never stores the token.
//! - `list`, `show`, `approve`, `reject`: an approver's commands over the
//!   approver API (`client`; docs/approver-api.md).
//!
//! The service refuses to start without an approver (nothing could ever
//! be decided), and refuses to serve tokens in plaintext on an address
//! other than loopback unless told `--allow-plaintext`. Its settings
//! (flags, config file, access list) are `settings`'; they are mapped
//! here onto `hookwire_approvals::Settings` and served by
//! `hookwire_approvals::run`, with the shared PostgreSQL queue and the
//! access list's reload on `SIGHUP`, which stay the command's.

mod client;
mod settings;

use std::path::PathBuf;

use hookwire::Verdict;
use hookwire::approval::ApprovalOutcome;
use hookwire_approvals::ApprovalQueue;
use hookwire_approvals::auth::{new_token, token_sha256};
use hookwire_approvals::settings::RawSettings;

use crate::error::CliError;
/// The default addresses, for the command's table of them (`args`).
#[cfg(test)]
pub(crate) use settings::{APPROVALS_GRPC_ADDR, APPROVALS_WEB_ADDR};
use settings::{ServeArgs, Settings, config_error, reload, settings};

/// The `approvals` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// Serve the approval service (gRPC), its web page and optionally its
    /// metrics until SIGINT or SIGTERM (a graceful shutdown).
    Serve(Box<ServeArgs>),
    /// Print a fresh token and the hash to put in the access list.
    #[command(after_help = "Example:\n  hookwire approvals token --name alice")]
    Token {
        /// The principal's name, for the access-list entry printed.
        #[arg(long, default_value = "NAME")]
        name: String,
        /// Print a host entry instead of an approver entry.
        #[arg(long)]
        host: bool,
    },
    /// List the pending requests this approver may decide.
    #[command(after_help = "Examples:\n  \
        hookwire approvals list --token-file ~/.hookwire/approver-token\n  \
        hookwire approvals list --endpoint https://approvals.internal:50061 --ca ca.pem \
        --token-file token --json")]
    List {
        #[command(flatten)]
        connect: client::ConnectArgs,
    },
    /// Show one pending request: its escalation, approval block and
    /// context as the host's redactor left it.
    #[command(after_help = "Example:\n  hookwire approvals show q-7 --token-file token --json")]
    Show {
        /// The request's id (from `list`).
        id: String,
        #[command(flatten)]
        connect: client::ConnectArgs,
    },
    /// Lift a pending request's deny, as asked or with edited arguments.
    #[command(after_help = "Examples:\n  \
        hookwire approvals approve q-7 --token-file token --note 'checked with finance'\n  \
        echo '{\"amount\": 500}' > args.json && \
        hookwire approvals approve q-7 --edit args.json --token-file token")]
    Approve {
        /// The request's id (from `list`).
        id: String,
        /// A JSON file with the edited target (the tool arguments at
        /// `pre_tool_call`), sent as a `transform` of `$target`.
        #[arg(long, value_name = "FILE")]
        edit: Option<PathBuf>,
        /// A note for the record (the permit's message).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        #[command(flatten)]
        connect: client::ConnectArgs,
    },
    /// Let a pending request's deny stand, with the reason the agent sees.
    #[command(after_help = "Example:\n  \
        hookwire approvals reject q-7 --reason 'over the monthly limit' --token-file token")]
    Reject {
        /// The request's id (from `list`).
        id: String,
        /// Why: the deny's message, shown to the agent and recorded.
        #[arg(long, value_name = "TEXT")]
        reason: String,
        #[command(flatten)]
        connect: client::ConnectArgs,
    },
}

/// Runs an `approvals` subcommand.
pub(crate) async fn run(command: ApprovalsCommand) -> Result<(), CliError> {
    match command {
        ApprovalsCommand::Token { name, host } => token(&name, host),
        ApprovalsCommand::Serve(args) => serve(settings(&args)?).await,
        ApprovalsCommand::List { connect } => list(&connect).await,
        ApprovalsCommand::Show { id, connect } => show(&id, &connect).await,
        ApprovalsCommand::Approve {
            id,
            edit,
            note,
            connect,
        } => {
            let mut verdict = match &edit {
                Some(path) => Verdict::transform("$target", client::edited(path)?),
                None => Verdict::allow(),
            };
            verdict.message = note.as_deref().map(client::note).filter(|n| !n.is_empty());
            decide(&id, &connect, ApprovalOutcome::Approve, verdict).await
        }
        ApprovalsCommand::Reject {
            id,
            reason,
            connect,
        } => {
            let reason = client::note(&reason);
            if reason.is_empty() {
                return Err(CliError::ApprovalsClient(
                    "--reason must say why (the agent is shown it)".into(),
                ));
            }
            let verdict = Verdict::deny(client::REJECT_REASON).with_message(reason);
            decide(&id, &connect, ApprovalOutcome::Reject, verdict).await
        }
    }
}

async fn list(connect: &client::ConnectArgs) -> Result<(), CliError> {
    let pending = connect.connect().await?.pending().await?;
    if connect.json {
        let views: Vec<_> = pending.iter().map(|s| client::view(s, false)).collect();
        println!("{}", serde_json::Value::Array(views));
    } else if pending.is_empty() {
        println!("nothing pending");
    } else {
        for s in &pending {
            println!("{}", client::line(s));
        }
    }
    Ok(())
}

async fn show(id: &str, connect: &client::ConnectArgs) -> Result<(), CliError> {
    let shown = connect.connect().await?.find(id).await?;
    let view = client::view(&shown, true);
    if connect.json {
        println!("{view}");
    } else {
        println!("{}", client::line(&shown));
        for (label, key) in [
            ("message", "message"),
            ("approval", "approval"),
            ("target", "target"),
            ("context", "context"),
        ] {
            if !view[key].is_null() {
                let text = serde_json::to_string_pretty(&view[key]).unwrap_or_default();
                println!("{label}: {text}");
            }
        }
    }
    Ok(())
}

async fn decide(
    id: &str,
    connect: &client::ConnectArgs,
    outcome: ApprovalOutcome,
    verdict: Verdict,
) -> Result<(), CliError> {
    let mut approver = connect.connect().await?;
    let shown = approver.find(id).await?;
    approver.decide(&shown, outcome, verdict).await?;
    let done = if outcome == ApprovalOutcome::Approve {
        "approved"
    } else {
        "rejected"
    };
    if connect.json {
        println!(
            "{}",
            serde_json::json!({"id": id, "status": "accepted", "outcome": done})
        );
    } else {
        println!("{id} {done}");
    }
    Ok(())
}

fn token(name: &str, host: bool) -> Result<(), CliError> {
    let token = new_token()?;
    let hash = token_sha256(&token);
    let list = if host { "hosts" } else { "approvers" };
    outln!("token:  {token}");
    outln!("sha256: {hash}");
    outln!();
    outln!("Give the token to {name} only; put the hash in the access list's {list:?}:");
    outln!(
        "  {}",
        serde_json::json!({"name": name, "token_sha256": hash})
    );
    Ok(())
}

async fn serve(s: Settings) -> Result<(), CliError> {
    let access = s.access.clone();
    let mut settings = hookwire_approvals::Settings::try_from(RawSettings {
        grpc: s.grpc,
        web: s.web,
        name: s.name,
        heartbeat: s.heartbeat,
        tls: s.tls,
        allow_plaintext: s.allow_plaintext,
        access: s.access,
        metrics_addr: s.metrics,
        notify: s.notify,
        webhook_tls: s.webhook_tls,
    })?;
    if let Some(url) = &s.database_url {
        settings = settings.with_queue(shared_queue(url).await?);
    }
    let access_files = s.access_files;
    let stop = stop_requested(move || reload(&access_files, &access))?;
    hookwire_approvals::run(settings, stop).await?;
    Ok(())
}

/// Watches Ctrl-C (`SIGINT`) and `SIGTERM`, either of which asks for a
/// graceful shutdown (what process managers send on a rolling restart):
/// the future resolves on the first, calling `on_hangup` for every
/// `SIGHUP` meanwhile. Refused when a signal cannot be watched.
fn stop_requested(on_hangup: impl Fn()) -> Result<impl std::future::Future<Output = ()>, CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|e| config_error(format!("cannot watch {name}: {e}")))
    };
    let mut terminate = watch(SignalKind::terminate(), "SIGTERM")?;
    let mut hangup = watch(SignalKind::hangup(), "SIGHUP")?;
    Ok(async move {
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            tokio::select! {
                _ = &mut interrupted => return,
                _ = terminate.recv() => return,
                _ = hangup.recv() => on_hangup(),
            }
        }
    })
}

/// The queue shared in PostgreSQL (docs/approvals-postgres.md). Its errors
/// name the URL with the password masked.
#[cfg(feature = "postgres")]
async fn shared_queue(url: &str) -> Result<ApprovalQueue, CliError> {
    let instance = hookwire_approvals_postgres::default_instance_id();
    let queue = hookwire_approvals_postgres::shared_queue(url, &instance)
        .await
        .map_err(|e| config_error(format!("--database-url: {e}")))?;
    outln!("approval queue:   shared, in PostgreSQL, as instance {instance}");
    Ok(queue)
}

/// Without the `postgres` feature there is no shared queue: refused with
/// what to do, never served from memory in its place.
#[cfg(not(feature = "postgres"))]
async fn shared_queue(_url: &str) -> Result<ApprovalQueue, CliError> {
    Err(config_error(
        "--database-url: this build of hookwire has no PostgreSQL support \
         (build hookwire-cli with its default `postgres` feature)"
            .to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use hookwire_approvals::{Access, AccessConfig};

    use super::settings::AccessFiles;
    use super::*;

    #[tokio::test]
    async fn plaintext_beyond_loopback_and_a_database_url_are_refused() {
        let approver = hookwire_approvals::ApproverConfig::token("ann", "t");
        let access = Access::new(&AccessConfig::default().approver(approver)).unwrap();
        let s = Settings {
            grpc: "0.0.0.0:0".parse().unwrap(),
            web: None,
            name: None,
            heartbeat: None,
            tls: None,
            allow_plaintext: false,
            access: access.clone(),
            database_url: None,
            metrics: None,
            access_files: AccessFiles::default(),
            notify: None,
            webhook_tls: Default::default(),
        };
        let e = serve(s).await.unwrap_err();
        assert!(e.to_string().contains("not a loopback address"), "{e}");
        let s = Settings {
            grpc: "127.0.0.1:0".parse().unwrap(),
            web: None,
            name: None,
            heartbeat: None,
            tls: None,
            allow_plaintext: false,
            access,
            database_url: Some("postgres://user:hunter2@db/approvals".into()),
            metrics: None,
            access_files: AccessFiles::default(),
            notify: None,
            webhook_tls: Default::default(),
        };
        let e = serve(s).await.unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_database_url_serves_the_queue_shared_in_postgresql() {
        use std::net::SocketAddr;
        use std::time::Duration;

        use hookwire::approval::{ApprovalRequest, ApprovalResolution, StreamResolution};
        use hookwire::pb;
        use hookwire_approvals::{HostDelivery, QueueEvent};

        let pg = hookwire_testkit::postgres::PgCluster::start()
            .unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
        let url = pg.create_database("cli").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let approver = hookwire_approvals::ApproverConfig::token("ann", "ann-token");
        let s = Settings {
            grpc: SocketAddr::from(([127, 0, 0, 1], port)),
            web: None,
            name: None,
            heartbeat: None,
            tls: None,
            allow_plaintext: false,
            access: Access::new(&AccessConfig::default().approver(approver)).unwrap(),
            database_url: Some(url.clone()),
            metrics: None,
            access_files: AccessFiles::default(),
            notify: None,
            webhook_tls: Default::default(),
        };
        let serving = tokio::spawn(serve(s));

        // A host on another instance of the same database.
        let other = hookwire_approvals_postgres::shared_queue(&url, "other")
            .await
            .unwrap();
        let mut watching = other.subscribe();
        let (host, mut deliveries) = other.connect_host("billing-agent");
        let ctx = hookwire::AgentContext::from_json(serde_json::json!({
            "spec": "agent-hooks/0.1",
            "interception_point": "pre_tool_call",
            "timestamp": "2026-01-01T00:00:00Z",
            "sequence": 1,
            "agent": {"id": "a", "framework": "hookwire"},
            "session": {"id": "s-1"},
            "tool_call": {"id": "tc-1", "name": "wire_transfer", "args": {"amount": 1}},
        }))
        .unwrap();
        let request = ApprovalRequest {
            context_identity: None,
            interception_point: hookwire::InterceptionPoint::PreToolCall,
            verdict: hookwire::Verdict::escalate("big_transfer"),
            context: ctx,
        };
        let id = host
            .submit("r1", request.clone(), Duration::from_secs(30))
            .unwrap();
        while !matches!(watching.events.recv().await, Ok(QueueEvent::Added(_))) {}

        // Decided through the command's gRPC port, once it listens.
        let endpoint = format!("http://127.0.0.1:{port}");
        let mut client = loop {
            match pb::approval_service_client::ApprovalServiceClient::connect(endpoint.clone())
                .await
            {
                Ok(c) => break c,
                Err(_) if !serving.is_finished() => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the command stopped: {e}"),
            }
        };
        let approved = ApprovalResolution::approve(&request, hookwire::Verdict::allow());
        let status = loop {
            let mut call = tonic::Request::new(pb::DecideRequest {
                approver: String::new(),
                resolution: Some(pb::ApprovalResolution::from(&StreamResolution {
                    request_id: id.clone(),
                    approver: String::new(),
                    resolution: approved.clone(),
                })),
            });
            call.metadata_mut()
                .insert("authorization", "Bearer ann-token".parse().unwrap());
            let status = client.decide(call).await.unwrap().into_inner().status;
            // The command's instance may not have read the request yet; an
            // unknown id is refused without changing anything.
            if status != pb::DecisionStatus::UnknownRequest as i32 {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(status, pb::DecisionStatus::Accepted as i32);
        let delivered = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Some(HostDelivery::Resolution(r)) = deliveries.recv().await {
                    break r;
                }
            }
        })
        .await
        .expect("the decision reached the host on the other instance");
        assert_eq!(
            (delivered.request_id.as_str(), delivered.approver.as_str()),
            ("r1", "ann")
        );
        serving.abort();
    }
}
