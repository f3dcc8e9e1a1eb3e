//! Remote interceptors: an interceptor service reached over gRPC, at one
//! endpoint or as a fleet of replicas.
//!
//! The channels connect lazily, so a host builds even when a service is
//! not up yet; an unreachable service is a failed call, i.e.
//! `host_error:interceptor_failed`, never a build error. Each call carries
//! the binding's timeout both as a local deadline (the call future is
//! dropped, which cancels the HTTP/2 stream) and as the `grpc-timeout`
//! header, so a well-behaved service stops working on it too.
//!
//! A response is decoded and validated once, by the wire conversion
//! (`InterceptorResponse::try_from`, which applies
//! [`InterceptorResponse::validate`](hookwire::InterceptorResponse::validate));
//! [`TlsConfig`] says how an `https://` endpoint is verified and, with a
//! [`ClientIdentity`], how the host proves who it is to a service requiring
//! mutual TLS.
//!
//! ## Replicas
//!
//! A binding may name several endpoints, and/or have its endpoints' names
//! re-resolved periodically (one replica per address). What that means:
//!
//! - **A call is a decision.** One emission is one call to one replica;
//!   the host never asks two replicas and never asks again after a verdict
//!   or an error status, because a verdict (or a half-done decision with
//!   side effects, like an approval request or a rate counter) must not be
//!   taken twice. So replicas must be stateless, or share their state
//!   (a database, the shared approval queue): any replica must give the
//!   answer the service would give.
//! - **Retried only when nothing was decided.** An attempt is sent to
//!   another admitted replica, within the same deadline, only when it
//!   provably never reached a handler: the connection was refused, or
//!   HTTP/2 refused the stream (`REFUSED_STREAM`, a `GOAWAY` that excluded
//!   it), which the protocol defines as not processed. Every such attempt
//!   ejects its replica and moves on, to each admitted replica at most
//!   once, until one is reached or none is left. A reset or a closed
//!   connection after the request went out, a timeout, an error status,
//!   an invalid verdict: all stand as the call's failure.
//! - **Balancing** is power of two choices on a peak-EWMA latency ×
//!   outstanding-calls load (`balance`; why not tower's `Balance` is said
//!   there).
//! - **Ejection and recovery** (`monitor`): a refused connection ejects a
//!   replica at once; so do consecutive transport failures, a health
//!   `Watch` reporting `NOT_SERVING`, and a probe left unanswered after a
//!   timeout. An ejected replica is probed with backoff and jitter and
//!   re-admitted when it answers. With no admitted replica an emission is
//!   denied at once (`interceptor_failed`) instead of waiting out its
//!   timeout.
//!
//! From the call path down to what both transports share:
//!
//! | module | role |
//! | --- | --- |
//! | `pool` | the binding's service: replicas checked and built, the call and its retry rule, `Describe` and health over the fleet |
//! | `dns` | replicas from a name re-resolved periodically, replacing the fleet's set |
//! | `monitor` | one replica's health monitor: ejection and re-admission |
//! | `fleet` | the replica set and what the balancer knows of each replica, shared by the three above |
//! | `balance` | power of two choices and the load estimate |
//! | `endpoint` | one replica: its lazily connecting channel, the point call on one of the two transports, `Describe` and health |
//! | `multiplex` | one replica's `Multiplex` streams (a hookwire extension): every session's emissions on a few streams, when the service declares it |
//! | `choice` | which of the two transports a replica's calls take: the `Describe` probe no emission waits long for, and the fallback to unary of a refused stream |
//! | `unary` | one replica's unary RPCs: the point call, and the request stamping every unary call shares |
//! | `attempt` | one attempt as both transports report it: its failure, how far it got, and the one mapping of deadlines, statuses and responses |
//! | `described` | what `Describe` tells a host: the manifest and the transport its calls take |
//! | `tls` | how an `https://` endpoint is verified and the client certificate presented |
//! | `metadata` | the static gRPC metadata a binding sends, checked once |
//! | `target` | where a binding's service runs, as configured |

mod attempt;
mod balance;
mod choice;
mod described;
mod dns;
mod endpoint;
mod fleet;
mod metadata;
mod monitor;
mod multiplex;
mod pool;
mod target;
mod tls;
mod unary;

pub use described::{Described, Transport};
pub use endpoint::HEALTH_UNIMPLEMENTED;
pub(crate) use metadata::metadata_entry;
pub(crate) use pool::RemoteInterceptor;
pub(crate) use target::ServiceTarget;
/// The approval stream reaches its service with the same TLS settings.
pub(crate) use tls::secured;
pub use tls::{ClientIdentity, TlsConfig};
