//! Transport limits of a gRPC server: what keeps one misbehaving or
//! unlucky peer — or a flood of them — from taking the service down.
//!
//! [`ServerLimits`] gathers them with their defaults; one call,
//! [`ServerLimits::harden`], applies them to a `tonic` server and wraps its
//! listener. The interceptor SDK's [`Server`](crate::Server) and the
//! approval service both serve through it.
//!
//! | limit | default | enforced by |
//! | --- | --- | --- |
//! | [`max_connections`](ServerLimits::max_connections) | 512 | the accept loop: a connection beyond it waits in the kernel's backlog until one closes |
//! | [`handshake_timeout`](ServerLimits::handshake_timeout) | 10 s | the connection: a peer that has not sent its first [`HANDSHAKE_BYTES`] bytes (the HTTP/2 preface, or the start of a TLS hello) by then is closed |
//! | [`idle_timeout`](ServerLimits::idle_timeout) | 300 s | the connection: a peer that sends nothing for that long is closed |
//! | [`keepalive_interval`](ServerLimits::keepalive_interval), [`keepalive_timeout`](ServerLimits::keepalive_timeout) | 60 s, 20 s | HTTP/2 PING: a peer that does not acknowledge one in time is closed; the acknowledgements of a live, idle peer keep it under the idle timeout |
//! | [`max_concurrent_streams`](ServerLimits::max_concurrent_streams) | 256 | HTTP/2 SETTINGS: calls at once on one connection |
//! | [`max_header_list_bytes`](ServerLimits::max_header_list_bytes) | 64 KiB | HTTP/2: request metadata per call |
//! | [`accept_backoff_max`](ServerLimits::accept_backoff_max) | 1 s | the accept loop: after an accept error (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) it sleeps 5 ms, doubling up to this bound, instead of spinning |
//!
//! Request messages are bounded separately, per service, by the decoding
//! limit ([`DEFAULT_MAX_MESSAGE_BYTES`](crate::DEFAULT_MAX_MESSAGE_BYTES):
//! the §12.3 context bound with room for framing).
//!
//! The idle timeout is read silence: it never closes a peer that answers
//! the server's keepalive PINGs, so the effective idle timeout is never
//! shorter than one keepalive interval plus its timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes a peer must send before its handshake counts as begun: the length
/// of the HTTP/2 client connection preface (a TLS ClientHello is longer).
pub const HANDSHAKE_BYTES: u64 = 24;

/// The first sleep after an accept error; it doubles up to
/// [`ServerLimits::accept_backoff_max`].
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);

/// The transport limits of one server. Every field has a default (see the
/// module table); build one with struct update syntax:
/// `ServerLimits { max_connections: 64, ..ServerLimits::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once. One more waits, unaccepted, until a
    /// connection closes; those already open keep working.
    pub max_connections: usize,
    /// Time a new connection has to send its first [`HANDSHAKE_BYTES`].
    pub handshake_timeout: Duration,
    /// Time a connection may stay silent (nothing received) once its
    /// handshake began.
    pub idle_timeout: Duration,
    /// Interval of the server's HTTP/2 keepalive PINGs.
    pub keepalive_interval: Duration,
    /// Time a PING may wait for its acknowledgement before the connection
    /// is closed.
    pub keepalive_timeout: Duration,
    /// Concurrent HTTP/2 streams (calls) per connection.
    pub max_concurrent_streams: u32,
    /// Largest request header list (gRPC metadata) per call, in bytes.
    pub max_header_list_bytes: u32,
    /// Longest sleep between accept attempts after accept errors.
    pub accept_backoff_max: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 512,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
            max_concurrent_streams: 256,
            max_header_list_bytes: 64 * 1024,
            accept_backoff_max: Duration::from_secs(1),
        }
    }
}

impl ServerLimits {
    /// Applies every limit: the HTTP/2 settings to `server`, and the
    /// connection limit, timeouts and accept back-off to the stream of
    /// connections accepted on `listener`. Serve with
    /// `server.add_service(..).serve_with_incoming_shutdown(incoming, signal)`.
    pub fn harden<L>(
        &self,
        server: tonic::transport::Server<L>,
        listener: TcpListener,
    ) -> (tonic::transport::Server<L>, LimitedIncoming) {
        (self.apply(server), self.incoming(listener))
    }

    /// The HTTP/2 half of [`harden`](Self::harden): keepalive, concurrent
    /// streams and header list size.
    pub fn apply<L>(&self, server: tonic::transport::Server<L>) -> tonic::transport::Server<L> {
        server
            .http2_keepalive_interval(Some(self.keepalive_interval))
            .http2_keepalive_timeout(Some(self.keepalive_timeout))
            .max_concurrent_streams(self.max_concurrent_streams)
            .http2_max_header_list_size(self.max_header_list_bytes)
    }

    /// The connection half of [`harden`](Self::harden): `listener`'s
    /// connections, at most [`max_connections`](Self::max_connections) at
    /// once, each closed when its handshake or idle timeout expires.
    pub fn incoming(&self, listener: TcpListener) -> LimitedIncoming {
        LimitedIncoming::new(listener, *self)
    }

    /// The idle timeout as enforced: never shorter than one keepalive
    /// round, so a live peer that only answers PINGs is kept.
    pub fn effective_idle_timeout(&self) -> Duration {
        self.idle_timeout.max(
            self.keepalive_interval
                .saturating_add(self.keepalive_timeout),
        )
    }
}

/// The connections accepted on a listener under [`ServerLimits`]: a
/// `Stream` for tonic's `serve_with_incoming*`. Accept errors never reach
/// tonic (which would retry at once); they are logged and retried after a
/// growing sleep.
pub struct LimitedIncoming {
    inner: Pin<Box<dyn Stream<Item = io::Result<LimitedConnection>> + Send>>,
}

impl std::fmt::Debug for LimitedIncoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedIncoming").finish_non_exhaustive()
    }
}

struct AcceptLoop {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    limits: ServerLimits,
}

impl LimitedIncoming {
    fn new(listener: TcpListener, limits: ServerLimits) -> Self {
        let state = AcceptLoop {
            listener,
            slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            limits,
        };
        let stream = futures::stream::unfold(state, |state| async move {
            let connection = state.next().await;
            Some((Ok(connection), state))
        });
        Self {
            inner: Box::pin(stream),
        }
    }
}

impl AcceptLoop {
    /// Waits for a free slot, then for a connection, sleeping after each
    /// accept error.
    async fn next(&self) -> LimitedConnection {
        let mut backoff = ACCEPT_BACKOFF_MIN;
        loop {
            let permit = match self.slots.clone().acquire_owned().await {
                Ok(permit) => permit,
                // The semaphore is never closed; waiting forever is the
                // truthful answer if it were.
                Err(_) => std::future::pending().await,
            };
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return LimitedConnection::new(stream, permit, &self.limits);
                }
                // The peer gave up between SYN and accept: nothing to wait for.
                Err(e) if is_connection_error(&e) => {}
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?backoff, "accept failed; backing off");
                    drop(permit);
                    tokio::time::sleep(backoff).await;
                    backoff = backoff
                        .saturating_mul(2)
                        .min(self.limits.accept_backoff_max);
                }
            }
        }
    }
}

/// Errors of one connection, not of the listener: retried at once.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

impl Stream for LimitedIncoming {
    type Item = io::Result<LimitedConnection>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// One accepted connection: holds its slot until dropped, and fails its
/// reads (so the HTTP/2 connection closes) once the peer has been silent
/// past its handshake or idle timeout.
pub struct LimitedConnection {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    received: u64,
    accepted: Instant,
    last_read: Instant,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl std::fmt::Debug for LimitedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedConnection")
            .field("peer", &self.stream.peer_addr().ok())
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl LimitedConnection {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit, limits: &ServerLimits) -> Self {
        let now = Instant::now();
        Self {
            stream,
            _slot: slot,
            received: 0,
            accepted: now,
            last_read: now,
            handshake_timeout: limits.handshake_timeout,
            idle_timeout: limits.effective_idle_timeout(),
            deadline: Box::pin(tokio::time::sleep_until(now + limits.handshake_timeout)),
        }
    }

    /// When the connection times out if nothing more arrives.
    fn due(&self) -> Instant {
        if self.received < HANDSHAKE_BYTES {
            // The handshake clock runs from accept, whatever trickled in.
            self.accepted + self.handshake_timeout
        } else {
            self.last_read + self.idle_timeout
        }
    }

    /// `Pending` while the connection may still wait; the timeout error
    /// once it may not.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            ready!(self.deadline.as_mut().poll(cx));
            let due = self.due();
            if due <= Instant::now() {
                let phase = if self.received < HANDSHAKE_BYTES {
                    "handshake"
                } else {
                    "idle"
                };
                tracing::debug!(peer = ?self.stream.peer_addr().ok(), phase, "closing a silent connection");
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connection {phase} timeout"),
                ));
            }
            self.deadline.as_mut().reset(due);
        }
    }
}

impl Connected for LimitedConnection {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for LimitedConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n > 0 {
                    self.received = self.received.saturating_add(n);
                    self.last_read = Instant::now();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.poll_deadline(cx) {
                Poll::Ready(e) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for LimitedConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::time::Instant as StdInstant;

    use hookwire::{Manifest, Verdict};
    use tonic::transport::{Channel, Endpoint};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    use super::*;
    use crate::{Interceptor, RunningServer, Server, async_trait, manifest};

    struct AllowAll;

    #[async_trait]
    impl Interceptor for AllowAll {
        type Response = Verdict;
        fn manifest(&self) -> Manifest {
            manifest("allow-all", "0")
        }
    }

    async fn serve(limits: ServerLimits) -> RunningServer {
        Server::builder()
            .limits(limits)
            .service(AllowAll)
            .spawn_local()
            .await
            .unwrap()
    }

    async fn channel(endpoint: &str) -> Channel {
        Endpoint::from_shared(endpoint.to_owned())
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    async fn check(channel: &Channel, within: Duration) -> Result<(), tonic::Status> {
        let mut client = HealthClient::new(channel.clone());
        let mut request = tonic::Request::new(HealthCheckRequest::default());
        request.set_timeout(within);
        client.check(request).await.map(|_| ())
    }

    /// Blocks until the server closes `stream` (EOF or reset), returning
    /// how long that took; panics after `bound`.
    fn closed_within(mut stream: std::net::TcpStream, bound: Duration) -> Duration {
        let started = StdInstant::now();
        stream.set_read_timeout(Some(bound)).unwrap();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return started.elapsed(),
                // The server's SETTINGS (and PINGs) before it gives up.
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return started.elapsed(),
                Err(e) => panic!("still open after {bound:?}: {e}"),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_that_never_starts_its_handshake_is_closed() {
        let limits = ServerLimits {
            handshake_timeout: Duration::from_millis(300),
            ..ServerLimits::default()
        };
        let server = serve(limits).await;
        let addr = server.addr();
        let took = tokio::task::spawn_blocking(move || {
            let silent = std::net::TcpStream::connect(addr).unwrap();
            closed_within(silent, Duration::from_secs(5))
        })
        .await
        .unwrap();
        assert!(
            took >= Duration::from_millis(250),
            "closed too early: {took:?}"
        );
        // A few bytes are not a handshake either.
        let took = tokio::task::spawn_blocking(move || {
            let mut trickle = std::net::TcpStream::connect(addr).unwrap();
            trickle.write_all(b"PRI * HTTP/2.0").unwrap();
            closed_within(trickle, Duration::from_secs(5))
        })
        .await
        .unwrap();
        assert!(took < Duration::from_secs(2), "{took:?}");
        // The server still serves.
        check(&channel(&server.endpoint()).await, Duration::from_secs(5))
            .await
            .unwrap();
        server.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_peer_silent_after_its_handshake_is_closed_and_a_live_one_is_kept() {
        let limits = ServerLimits {
            idle_timeout: Duration::from_millis(400),
            keepalive_interval: Duration::from_millis(150),
            keepalive_timeout: Duration::from_millis(150),
            ..ServerLimits::default()
        };
        assert_eq!(limits.effective_idle_timeout(), Duration::from_millis(400));
        let server = serve(limits).await;
        let addr = server.addr();
        let took = tokio::task::spawn_blocking(move || {
            let mut silent = std::net::TcpStream::connect(addr).unwrap();
            // The HTTP/2 preface and an empty SETTINGS frame, then nothing:
            // no SETTINGS ack, no PING ack, no request.
            silent
                .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                .unwrap();
            silent.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap();
            closed_within(silent, Duration::from_secs(5))
        })
        .await
        .unwrap();
        assert!(took < Duration::from_secs(2), "{took:?}");
        // A client that answers PINGs outlives the idle timeout.
        let live = channel(&server.endpoint()).await;
        check(&live, Duration::from_secs(5)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        check(&live, Duration::from_secs(5)).await.unwrap();
        server.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_beyond_the_limit_wait_while_open_ones_keep_working() {
        let limits = ServerLimits {
            max_connections: 2,
            ..ServerLimits::default()
        };
        let server = serve(limits).await;
        let first = channel(&server.endpoint()).await;
        let second = channel(&server.endpoint()).await;
        check(&first, Duration::from_secs(5)).await.unwrap();
        check(&second, Duration::from_secs(5)).await.unwrap();
        // The third connects (the kernel queues it) but is not served.
        let third = channel(&server.endpoint()).await;
        let waited = check(&third, Duration::from_millis(500)).await.unwrap_err();
        assert!(
            matches!(
                waited.code(),
                tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ),
            "{waited:?}"
        );
        check(&first, Duration::from_secs(5)).await.unwrap();
        check(&second, Duration::from_secs(5)).await.unwrap();
        // Closing one frees its slot for the waiting one.
        drop(first);
        check(&third, Duration::from_secs(5)).await.unwrap();
        check(&second, Duration::from_secs(5)).await.unwrap();
        server.shutdown().await.unwrap();
    }

    /// The child side of the next test: serves under the file-descriptor
    /// limit its parent set, with a connection limit above it, and prints
    /// its port. Runs only when that test starts it.
    #[test]
    #[ignore = "started by accept_errors_back_off_instead_of_spinning in a child process"]
    fn emfile_child_server() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let limits = ServerLimits {
                max_connections: 100_000,
                handshake_timeout: Duration::from_secs(3600),
                ..ServerLimits::default()
            };
            let server = serve(limits).await;
            println!("HOOKWIRE_CHILD_PORT={}", server.addr().port());
            std::io::stdout().flush().unwrap();
            // Serve until the parent kills the process.
            std::future::pending::<()>().await;
        });
    }

    /// CPU time (user + system) the process `pid` used, in clock ticks.
    fn cpu_ticks(pid: u32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat(5), 12 and 13 here.
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    #[test]
    fn accept_errors_back_off_instead_of_spinning() {
        use std::io::BufRead;
        use std::process::{Command, Stdio};

        if !std::path::Path::new("/proc/self/stat").exists() {
            eprintln!("skipped: needs /proc to measure the server's CPU time");
            return;
        }
        // A child with 64 file descriptors: the runtime, stdio and ~50
        // connections fill them, and accept then fails with EMFILE.
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n 64 && exec "$0" "$@""#)
            .arg(&exe)
            .args([
                "--exact",
                "limits::tests::emfile_child_server",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let port: u16 = loop {
            let line = lines.next().expect("child exited").unwrap();
            // libtest prints the test's name on the same line.
            if let Some((_, p)) = line.split_once("HOOKWIRE_CHILD_PORT=") {
                break p.trim().parse().unwrap();
            }
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        // Kills the child however this test ends.
        struct Reaper(std::process::Child);
        impl Drop for Reaper {
            fn drop(&mut self) {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
        let child = Reaper(child);
        // Past the limit the kernel's queue fills too; later SYNs may go
        // unanswered, which is fine: what matters is the server at EMFILE.
        let flood: Vec<_> = (0..120)
            .filter_map(|_| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()
            })
            .collect();
        assert!(flood.len() >= 60, "only {} connections", flood.len());
        std::thread::sleep(Duration::from_millis(500));
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count();
        assert!(
            fds >= 60,
            "the child holds {fds} descriptors: not at its limit"
        );
        let before = cpu_ticks(pid);
        let window = Duration::from_secs(2);
        std::thread::sleep(window);
        let ticks = cpu_ticks(pid) - before;
        // 100 ticks a second is one core; a spinning accept loop uses ~200.
        let share = ticks as f64 / (window.as_secs_f64() * 100.0);
        assert!(
            share < 0.2,
            "the accept loop used {share:.2} of a core at EMFILE"
        );
        drop(flood);
        // With the flood gone a normal request is served again.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let served = runtime.block_on(async {
            let deadline = StdInstant::now() + Duration::from_secs(10);
            loop {
                let attempt = async {
                    let channel = Endpoint::from_shared(format!("http://{addr}"))
                        .unwrap()
                        .connect_timeout(Duration::from_secs(2))
                        .connect()
                        .await
                        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
                    check(&channel, Duration::from_secs(2)).await
                };
                match attempt.await {
                    Ok(()) => return Ok(()),
                    Err(e) if StdInstant::now() > deadline => return Err(e),
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        drop(child);
        served.unwrap();
        eprintln!("accept loop at EMFILE: {ticks} ticks in {window:?} ({share:.3} of a core)");
    }
}
