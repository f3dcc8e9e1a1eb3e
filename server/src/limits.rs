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
//! | [`accept_backoff_max`](ServerLimits::accept_backoff_max) | 1 s | the accept loop: after an accept error (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`) it sleeps a random pause below a step that starts at 5 ms and doubles up to this bound (`hookwire::backoff`), instead of spinning |
//!
//! Request messages are bounded separately, per service, by the decoding
//! limit ([`DEFAULT_MAX_MESSAGE_BYTES`](crate::DEFAULT_MAX_MESSAGE_BYTES):
//! the §12.3 context bound with room for framing).
//!
//! The idle timeout is read silence: it never closes a peer that answers
//! the server's keepalive PINGs, so the effective idle timeout is never
//! shorter than one keepalive interval plus its timeout.
//!
//! - `settings`: [`ServerLimits`], its defaults and the HTTP/2 half;
//! - `incoming`: the accept loop ([`LimitedIncoming`]) and
//!   [`ServerLimits::harden`];
//! - `connection`: one accepted connection ([`LimitedConnection`]) and its
//!   handshake and idle timeouts.

mod connection;
mod incoming;
mod settings;

pub use connection::{HANDSHAKE_BYTES, LimitedConnection};
pub use incoming::LimitedIncoming;
pub use settings::ServerLimits;

#[cfg(test)]
mod tests;
