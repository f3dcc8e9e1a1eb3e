//! The server half of the load tool, run in a child process (`--serve`):
//! three services on loopback, each on its own port.
//!
//! - `allow`: a hookwire interceptor service that allows everything (the
//!   full server-side machinery: decode, §4 validation, hook, encode);
//! - `delay`: the same, each hook waiting a fixed [`DELAY`] first;
//! - `floor`: the bare transport: the generated tonic service answering
//!   `PreToolCall` with a prebuilt allow response, nothing decoded beyond
//!   what prost does for any tonic call;
//! - `unary`: the `allow` service with the `Multiplex` stream left out of
//!   its manifest, so hosts call it unary;
//! - `delay_unary`: the `delay` service without the stream, for the
//!   parallel-in-a-session rows over unary;
//! - `tcp`: the physical floor: a raw TCP echo of length-prefixed frames
//!   (a request of any length in, a fixed short answer out);
//! - `uds`: the `allow` service on an owner-only Unix socket (the SDK's
//!   `serve_unix_with_shutdown`), in a private directory of its own.
//!
//! The child prints `ports <allow> <delay> <floor> <unary> <tcp>
//! <delay_unary> unix:<path>` on
//! stdout, then serves
//! until its stdin reaches end of file (the parent exited or closed it), or
//! at the latest after [`MAX_LIFETIME`].

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::time::Duration;

use hookwire::pb;
use hookwire::pb::interceptor_server::{Interceptor as PbInterceptor, InterceptorServer};
use hookwire_server::GrpcAdapter;
use hookwire_server::prelude::*;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

/// What every hook of the `delay` service waits before answering.
pub const DELAY: Duration = Duration::from_millis(2);

/// The child never outlives this, whatever happens to its parent.
const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// Largest request any of the three services decodes (the 1 MiB growth
/// case needs more than tonic's 4 MiB default leaves for framing).
const MAX_MESSAGE: usize = 8 * 1024 * 1024;

struct AllowAll;

#[async_trait]
impl Interceptor for AllowAll {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("bench-allow", "0.1.0")
    }
}

struct Delayed;

#[async_trait]
impl Interceptor for Delayed {
    type Response = Verdict;

    fn manifest(&self) -> Manifest {
        manifest("bench-delay", "0.1.0")
    }

    async fn intercept(&self, _ctx: &AgentContext) -> Verdict {
        tokio::time::sleep(DELAY).await;
        Verdict::allow()
    }
}

/// The transport floor: a raw generated service.
struct Floor {
    allow: pb::InterceptorResponse,
}

/// The generated trait, implemented whole by a macro so that
/// `async_trait` sees every method: `PreToolCall` answers allow, every
/// other RPC is unimplemented.
macro_rules! floor_impl {
    ($($method:ident($req:ident);)*) => {
        #[tonic::async_trait]
        impl PbInterceptor for Floor {
            async fn pre_tool_call(
                &self,
                _request: Request<pb::PreToolCallRequest>,
            ) -> Result<Response<pb::InterceptorResponse>, Status> {
                Ok(Response::new(self.allow.clone()))
            }

            $(
                async fn $method(
                    &self,
                    _request: Request<pb::$req>,
                ) -> Result<Response<pb::InterceptorResponse>, Status> {
                    Err(Status::unimplemented("floor answers PreToolCall only"))
                }
            )*

            async fn describe(
                &self,
                _request: Request<pb::DescribeRequest>,
            ) -> Result<Response<pb::Manifest>, Status> {
                Err(Status::unimplemented("floor answers PreToolCall only"))
            }

            type MultiplexStream = hookwire_server::MultiplexStream;

            async fn multiplex(
                &self,
                _request: Request<tonic::Streaming<pb::MultiplexRequest>>,
            ) -> Result<Response<Self::MultiplexStream>, Status> {
                Err(Status::unimplemented("floor answers PreToolCall only"))
            }
        }
    };
}

floor_impl! {
    agent_startup(AgentStartupRequest);
    input(InputRequest);
    pre_model_call(PreModelCallRequest);
    post_model_call(PostModelCallRequest);
    post_tool_call(PostToolCallRequest);
    output(OutputRequest);
    agent_shutdown(AgentShutdownRequest);
}

/// What the raw TCP floor answers every frame with: about the size of an
/// encoded allow response.
pub const TCP_ANSWER: &[u8] = &[0x0a, 0x02, 0x08, 0x01];

/// The raw TCP floor: per connection, reads frames (a 4-byte big-endian
/// length, then that many bytes) and answers each with [`TCP_ANSWER`],
/// framed the same way.
async fn echo(listener: TcpListener) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    while let Ok((mut conn, _)) = listener.accept().await {
        let _ = conn.set_nodelay(true);
        tokio::spawn(async move {
            let mut frame = Vec::new();
            let mut answer = (TCP_ANSWER.len() as u32).to_be_bytes().to_vec();
            answer.extend_from_slice(TCP_ANSWER);
            loop {
                let Ok(len) = conn.read_u32().await else {
                    return;
                };
                frame.resize(len as usize, 0);
                if conn.read_exact(&mut frame).await.is_err()
                    || conn.write_all(&answer).await.is_err()
                {
                    return;
                }
            }
        });
    }
}

async fn bind() -> TcpListener {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind a loopback port")
}

fn port(l: &TcpListener) -> u16 {
    l.local_addr().expect("bound address").port()
}

/// A fresh directory only this user can enter, for the Unix socket (the
/// server refuses a socket in a directory others can write to).
fn private_dir() -> std::path::PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("hookwire-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("a private directory for the socket");
    dir
}

/// Runs the child: never returns.
pub fn run() -> ! {
    // Exit when the parent goes away (stdin closes) or after the cap.
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("server runtime");
    rt.block_on(async {
        let (allow, delay, floor) = (bind().await, bind().await, bind().await);
        let (unary, tcp, delay_unary) = (bind().await, bind().await, bind().await);
        let socket_dir = private_dir();
        let socket = socket_dir.join("allow.sock");
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "ports {} {} {} {} {} {} unix:{}",
                port(&allow),
                port(&delay),
                port(&floor),
                port(&unary),
                port(&tcp),
                port(&delay_unary),
                socket.display()
            );
            let _ = out.flush();
        }
        let never = std::future::pending::<()>;
        let allow = tokio::spawn(
            Server::builder()
                .max_message_size(MAX_MESSAGE)
                .service(AllowAll)
                .serve_with_listener(allow, never()),
        );
        let delay = tokio::spawn(
            Server::builder()
                .max_message_size(MAX_MESSAGE)
                .service(Delayed)
                .serve_with_listener(delay, never()),
        );
        let floor_service = Floor {
            allow: pb::InterceptorResponse::from(&InterceptorResponse::from(Verdict::allow())),
        };
        let floor = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(
                    InterceptorServer::new(floor_service).max_decoding_message_size(MAX_MESSAGE),
                )
                .serve_with_incoming(TcpIncoming::from(floor).with_nodelay(Some(true))),
        );
        let unary = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(
                    GrpcAdapter::new(AllowAll)
                        .unary_only()
                        .into_server()
                        .max_decoding_message_size(MAX_MESSAGE),
                )
                .serve_with_incoming(TcpIncoming::from(unary).with_nodelay(Some(true))),
        );
        let delay_unary = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(
                    GrpcAdapter::new(Delayed)
                        .unary_only()
                        .into_server()
                        .max_decoding_message_size(MAX_MESSAGE),
                )
                .serve_with_incoming(TcpIncoming::from(delay_unary).with_nodelay(Some(true))),
        );
        let tcp = tokio::spawn(echo(tcp));
        let uds = tokio::spawn(async move {
            Server::builder()
                .max_message_size(MAX_MESSAGE)
                .service(AllowAll)
                .serve_unix_with_shutdown(&socket, never())
                .await
        });
        let _ = tokio::join!(allow, delay, floor, unary, tcp, delay_unary, uds);
    });
    std::process::exit(1)
}
