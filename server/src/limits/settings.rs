//! The limits themselves: [`ServerLimits`], its defaults, and the HTTP/2
//! settings it puts on a `tonic` server.

use std::time::Duration;

/// The transport limits of one server. Every field has a default (see the
/// module table); build one with struct update syntax:
/// `ServerLimits { max_connections: 64, ..ServerLimits::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connections served at once. One more waits, unaccepted, until a
    /// connection closes; those already open keep working.
    pub max_connections: usize,
    /// Time a new connection has to send its first
    /// [`HANDSHAKE_BYTES`](crate::HANDSHAKE_BYTES).
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
    /// The HTTP/2 half of [`harden`](Self::harden): keepalive, concurrent
    /// streams and header list size.
    pub fn apply<L>(&self, server: tonic::transport::Server<L>) -> tonic::transport::Server<L> {
        server
            .http2_keepalive_interval(Some(self.keepalive_interval))
            .http2_keepalive_timeout(Some(self.keepalive_timeout))
            .max_concurrent_streams(self.max_concurrent_streams)
            .http2_max_header_list_size(self.max_header_list_bytes)
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
