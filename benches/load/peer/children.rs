//! The section's own processes, each this binary re-run with a flag:
//!
//! - `--serve-peer-upstream`: the mock upstream, one HTTP/1.1 server on
//!   loopback answering all three APIs from prebuilt bodies (whole, or its
//!   stream events as chunks), so the upstream costs every path the same
//!   little;
//! - `--serve-peer-gateway <upstream> <binding>…`: one
//!   `hookwire_gateway::Gateway` per binding argument, forwarding to the
//!   mock upstream (`embedded::host` reads each: the load bench's remote
//!   allow interceptor service, `hookwire policy`'s service with the
//!   destructive-command policy — each a real gRPC service in its own
//!   process — or a policy folder decided in the gateway's process, as
//!   `hookwire gateway --policy DIR` does).
//!
//! Each prints `ports …` on stdout, serves until its stdin closes, and
//! never outlives [`MAX_LIFETIME`].

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::post;
use hookwire_gateway::{CredentialPool, Gateway, GatewayConfig};

use super::apis::{ANSWER, Api, DENY_OUTPUT};
use crate::embedded;

/// The flag that makes this binary the mock upstream.
pub const UPSTREAM_FLAG: &str = "--serve-peer-upstream";
/// The flag that makes this binary the gateways' process.
pub const GATEWAY_FLAG: &str = "--serve-peer-gateway";

/// What a probe's request carries to have the mock upstream answer with
/// [`DENY_OUTPUT`] (which LiteLLM's guardrail refuses at `post_call`).
pub const ASK_DENIED_ANSWER: &str = "hookwire-peer-ask-denied-answer";

/// A child never outlives this, whatever happens to its parent.
const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// The largest request the mock upstream reads.
const MAX_REQUEST: usize = 1 << 20;

/// Exits the process when stdin reaches end of file (the parent exited or
/// closed it), or after [`MAX_LIFETIME`] (the `mcp` section's children
/// too).
pub fn exit_with_parent() {
    std::thread::spawn(|| {
        let mut line = String::new();
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        while matches!(lock.read_line(&mut line), Ok(n) if n > 0) {
            line.clear();
        }
        std::process::exit(0);
    });
    std::thread::spawn(|| {
        std::thread::sleep(MAX_LIFETIME);
        std::process::exit(0);
    });
}

/// A child's runtime: two workers, as the measuring process.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("child runtime")
}

/// Tells the parent where the child listens: one `ports …` line.
pub fn print_ports(ports: &[u16]) {
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ports {}", ports.join(" "));
    let _ = out.flush();
}

/// One API's prebuilt answers: whole and streamed, normal and the probe's.
#[derive(Clone)]
struct Answers {
    whole: Bytes,
    events: Vec<Bytes>,
    denied_whole: Bytes,
    denied_events: Vec<Bytes>,
}

impl Answers {
    fn of(api: Api) -> Self {
        Self {
            whole: api.whole(&ANSWER.concat()),
            events: api.events(&ANSWER),
            denied_whole: api.whole(DENY_OUTPUT),
            denied_events: api.events(&[DENY_OUTPUT]),
        }
    }

    fn answer(&self, body: &[u8]) -> Response {
        let asks_denied = contains(body, ASK_DENIED_ANSWER.as_bytes());
        let stream = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("stream").and_then(serde_json::Value::as_bool))
            .unwrap_or(false);
        let (content_type, body) = if stream {
            let events = if asks_denied {
                self.denied_events.clone()
            } else {
                self.events.clone()
            };
            (
                "text/event-stream",
                Body::from_stream(futures::stream::iter(
                    events.into_iter().map(Ok::<_, Infallible>),
                )),
            )
        } else {
            let whole = if asks_denied {
                self.denied_whole.clone()
            } else {
                self.whole.clone()
            };
            ("application/json", Body::from(whole))
        };
        let mut r = Response::new(body);
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind a loopback port")
}

/// The mock upstream's process: never returns.
pub fn serve_upstream() -> ! {
    exit_with_parent();
    runtime().block_on(async {
        let mut app = Router::new();
        for api in Api::ALL {
            let answers = Answers::of(api);
            app = app.route(
                api.path(),
                post(move |body: Bytes| {
                    let answers = answers.clone();
                    async move { answers.answer(&body) }
                }),
            );
        }
        let app = app.layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST));
        let listener = bind().await;
        print_ports(&[listener.local_addr().expect("address").port()]);
        let _ = axum::serve(listener, app).await;
    });
    std::process::exit(1)
}

/// The gateways' process (`args`: the upstream's base URL, then one
/// binding argument per gateway): never returns.
pub fn serve_gateway(args: &[String]) -> ! {
    exit_with_parent();
    let [upstream, bindings @ ..] = args else {
        eprintln!("{GATEWAY_FLAG} takes <upstream base URL> <binding>…");
        std::process::exit(2);
    };
    runtime().block_on(async {
        let mut ports = Vec::new();
        let mut running = Vec::new();
        for binding in bindings {
            let host = embedded::host(binding);
            let gateway = Gateway::new(host, GatewayConfig::new(upstream), CredentialPool::new())
                .expect("the gateway's configuration is valid");
            let r = gateway
                .spawn(SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .expect("the gateway binds a loopback port");
            ports.push(r.addr().port());
            running.push(r);
        }
        print_ports(&ports);
        std::future::pending::<()>().await;
    });
    std::process::exit(1)
}

/// A child of the section, killed and reaped when dropped.
pub struct Proc(Child);

impl Proc {
    /// The child's process id (for its CPU time).
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts this binary with `flag` and `args` and reads the ports it prints.
pub fn spawn(flag: &str, args: &[&str]) -> Result<(Proc, Vec<u16>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let mut child = Command::new(exe)
        .arg(flag)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn {flag}: {e}"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let child = Proc(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| format!("{flag}: reading its ports: {e}"))?;
    let ports = line
        .strip_prefix("ports ")
        .ok_or_else(|| format!("{flag}: unexpected output {line:?}"))?
        .split_whitespace()
        .map(|p| {
            p.parse::<u16>()
                .map_err(|e| format!("{flag}: port {p:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((child, ports))
}
