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
//!
//! The service refuses to start without an approver (nothing could ever
//! be decided), and refuses to serve tokens in plaintext on an address
//! other than loopback unless told `--allow-plaintext`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hookwire_approvals::auth::{new_token, token_sha256};
use hookwire_approvals::{Access, AccessConfig, ApprovalQueue, ApprovalServer, ServiceTls};
use hookwire_server::metrics::SharedRegistry;
use serde::Deserialize;

use crate::error::CliError;
use crate::metrics_endpoint::{self, MetricsEndpoint};

/// Where `approvals serve` listens for gRPC unless told otherwise.
pub(crate) const APPROVALS_GRPC_ADDR: &str = "127.0.0.1:50061";
/// Where `approvals serve` serves the page unless told otherwise.
pub(crate) const APPROVALS_WEB_ADDR: &str = "127.0.0.1:8080";

/// The `approvals` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// Serve the approval service (gRPC), its web page and optionally its
    /// metrics until SIGINT or SIGTERM (a graceful shutdown).
    Serve(Box<ServeArgs>),
    /// Print a fresh token and the hash to put in the access list.
    Token {
        /// The principal's name, for the access-list entry printed.
        #[arg(long, default_value = "NAME")]
        name: String,
        /// Print a host entry instead of an approver entry.
        #[arg(long)]
        host: bool,
    },
}

/// `approvals serve`'s flags. Each one overrides the config file's value.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// JSON settings file: addresses, TLS files, the access list (see
    /// docs/approvals.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A JSON access list (hosts, approvers, revoked token hashes),
    /// replacing the config file's `access`.
    #[arg(long, value_name = "FILE")]
    access: Option<PathBuf>,
    /// gRPC address (default 127.0.0.1:50061).
    #[arg(long, value_name = "ADDR")]
    grpc_addr: Option<SocketAddr>,
    /// Web page address (default 127.0.0.1:8080).
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
    /// it where only the scraper reaches.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
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
struct Settings {
    grpc: SocketAddr,
    web: Option<SocketAddr>,
    name: Option<String>,
    heartbeat: Option<Duration>,
    tls: Option<ServiceTls>,
    allow_plaintext: bool,
    access: Access,
    database_url: Option<String>,
    metrics: Option<SocketAddr>,
    access_files: AccessFiles,
}

fn config_error(what: impl Into<String>) -> CliError {
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
struct AccessFiles {
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
fn reload(files: &AccessFiles, current: &Access) {
    let fresh = match &files.config {
        Some(path) => read(path)
            .and_then(|text| parse::<ConfigFile>(path, &text))
            .and_then(|file| access(files, file.access)),
        None => access(files, None),
    };
    match fresh {
        Ok(fresh) => {
            current.replace_with(&fresh);
            eprintln!("approval access list reloaded");
        }
        Err(e) => {
            eprintln!("approval access list NOT reloaded, the previous one stays in force: {e}")
        }
    }
}

fn settings(args: &ServeArgs) -> Result<Settings, CliError> {
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
    })
}

/// Runs an `approvals` subcommand.
pub(crate) async fn run(command: ApprovalsCommand) -> Result<(), CliError> {
    match command {
        ApprovalsCommand::Token { name, host } => token(&name, host),
        ApprovalsCommand::Serve(args) => serve(settings(&args)?).await,
    }
}

fn token(name: &str, host: bool) -> Result<(), CliError> {
    let token = new_token()?;
    let hash = token_sha256(&token);
    let list = if host { "hosts" } else { "approvers" };
    println!("token:  {token}");
    println!("sha256: {hash}");
    println!();
    println!("Give the token to {name} only; put the hash in the access list's {list:?}:");
    println!(
        "  {}",
        serde_json::json!({"name": name, "token_sha256": hash})
    );
    Ok(())
}

async fn serve(s: Settings) -> Result<(), CliError> {
    let access = s.access.clone();
    if s.tls.is_none() && !s.allow_plaintext {
        let exposed = std::iter::once(s.grpc)
            .chain(s.web)
            .find(|a| !a.ip().is_loopback());
        if let Some(addr) = exposed {
            return Err(config_error(format!(
                "{addr} is not a loopback address: serve it over TLS (--tls-cert, --tls-key), \
                 or pass --allow-plaintext behind a TLS-terminating proxy"
            )));
        }
    }
    let queue = match &s.database_url {
        Some(url) => shared_queue(url).await?,
        None => ApprovalQueue::new(),
    };
    let mut server = ApprovalServer::with_queue(queue, s.access);
    if let Some(name) = s.name {
        server = server.name(name);
    }
    if let Some(h) = s.heartbeat {
        server = server.heartbeat_interval(h);
    }
    if let Some(tls) = s.tls {
        server = server.tls(tls);
    }
    let registry: SharedRegistry = Arc::default();
    if s.metrics.is_some() {
        server = server.metrics(&mut registry.lock().unwrap_or_else(PoisonError::into_inner));
    }
    // Bound before serving, so that a busy port fails the start.
    let metrics_listener = metrics_endpoint::bind(s.metrics).await?;
    let running = server.spawn(s.grpc, s.web).await?;
    println!("approval service: {}", running.endpoint());
    if let Some(url) = running.web_url() {
        println!("approval page:    {url}");
    }
    let metrics = MetricsEndpoint::serve(metrics_listener, registry, "approval metrics: ")?;
    stop_requested(|| reload(&s.access_files, &access)).await?;
    running.shutdown().await?;
    metrics.stop().await
}

/// Waits for Ctrl-C (`SIGINT`) or `SIGTERM`, either of which asks for a
/// graceful shutdown (what process managers send on a rolling restart),
/// calling `on_hangup` for every `SIGHUP` meanwhile.
async fn stop_requested(on_hangup: impl Fn()) -> Result<(), CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|e| config_error(format!("cannot watch {name}: {e}")))
    };
    let mut terminate = watch(SignalKind::terminate(), "SIGTERM")?;
    let mut hangup = watch(SignalKind::hangup(), "SIGHUP")?;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        tokio::select! {
            _ = &mut interrupted => return Ok(()),
            _ = terminate.recv() => return Ok(()),
            _ = hangup.recv() => on_hangup(),
        }
    }
}

/// The queue shared in PostgreSQL (docs/approvals-postgres.md). Its errors
/// name the URL with the password masked.
#[cfg(feature = "postgres")]
async fn shared_queue(url: &str) -> Result<ApprovalQueue, CliError> {
    let instance = hookwire_approvals_postgres::default_instance_id();
    let queue = hookwire_approvals_postgres::shared_queue(url, &instance)
        .await
        .map_err(|e| config_error(format!("--database-url: {e}")))?;
    println!("approval queue:   shared, in PostgreSQL, as instance {instance}");
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
        };
        let e = serve(s).await.unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_database_url_serves_the_queue_shared_in_postgresql() {
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
