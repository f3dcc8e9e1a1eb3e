//! The floor every hookwire edge stands on: the gateway, the MCP proxy,
//! the hooks daemon and the approval service each read bearer tokens,
//! reach an upstream over HTTPS, parse server-sent events and listen on
//! Unix sockets (the interceptor services too), and each
//! does it through this crate, so that the four behave alike.
//!
//! | module | role |
//! |---|---|
//! | `clients` | the clients file (`NAME SHA256-HEX` a line): who may use an edge, read again when it changes |
//! | `token` | `Authorization: Bearer` parsing (RFC 6750 / RFC 9110), SHA-256 hashes, constant-time comparison, random tokens and ids |
//! | `https` | the pooled HTTP/1.1 client to upstreams: web PKI roots, an extra CA, a client certificate |
//! | `unix` | a Unix socket only its owner can reach: safe bind (0600, private directory, stale-socket rules), peer user-id check on accept |
//! | `sessions` | the bounded session table every edge keeps: per-owner quotas, displacement or refusal when full, places booked before a slow start, idle-out by a reaper, each evicted session ended |
//! | `sse` | the incremental server-sent event parser (WHATWG rules), failing closed on an event over its bound |
//!
//! The crate depends on no other hookwire crate: every edge may depend on
//! it without a circle.

pub mod clients;
mod error;
pub mod https;
pub mod sessions;
pub mod sse;
pub mod token;
pub mod unix;

pub use error::Error;
