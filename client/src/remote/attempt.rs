//! One attempt of a point call on one replica, as both transports (the
//! unary RPCs and the `Multiplex` stream) report it: the failure the
//! binding turns into its slot deny, and how far the attempt got
//! ([`Reach`]), which decides whether the balancer may retry it elsewhere.
//!
//! The balancer may retry on another replica only an attempt that provably
//! never reached a handler — the connection was refused, or HTTP/2 refused
//! the stream (`REFUSED_STREAM`, or a `GOAWAY` that excluded it), both of
//! which the protocol defines as "not processed". Everything a transport
//! learns — a deadline, a status, a response to decode — maps to a failure
//! here, once, so a stream's answer and a unary call's mean the same.

use std::future::Future;
use std::time::Duration;

use hookwire::{InterceptorResponse, pb};

use crate::call_failure::CallFailure;

/// How far a failed attempt got, which decides what the balancer may do
/// next: retry elsewhere, eject the replica, or only report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// The request provably never reached a handler (connection refused,
    /// stream refused): safe to send to another replica.
    NeverReached,
    /// The transport failed after the request may have been sent (a
    /// reset, a closed connection, a server-side `UNAVAILABLE`): not
    /// retried, counted toward passive ejection.
    Transport,
    /// The deadline passed with no answer: not retried; the replica is
    /// probed.
    TimedOut,
    /// The service answered (a status of its handler or an invalid
    /// response): the replica is reachable.
    Answered,
}

/// A failed attempt: what the binding reports, and how far it got.
#[derive(Debug)]
pub(super) struct AttemptFailure {
    /// The failure the binding turns into its slot deny.
    pub(super) failure: CallFailure,
    /// How far the attempt got.
    pub(super) reach: Reach,
}

impl AttemptFailure {
    /// The deadline passed before an answer came.
    pub(super) fn timed_out() -> Self {
        Self {
            failure: CallFailure::TimedOut,
            reach: Reach::TimedOut,
        }
    }

    /// The call failed as `kind` says (`stream closed`, ...), having got
    /// as far as `reach`.
    pub(super) fn failed(kind: impl Into<String>, reach: Reach) -> Self {
        Self {
            failure: CallFailure::Failed(kind.into()),
            reach,
        }
    }
}

/// Runs `attempt` under `timeout` (`None`: unbounded); past it, the
/// attempt is dropped, which cancels it, and fails as timed out.
pub(super) async fn within<T>(
    timeout: Option<Duration>,
    attempt: impl Future<Output = Result<T, AttemptFailure>>,
) -> Result<T, AttemptFailure> {
    match timeout {
        Some(t) => tokio::time::timeout(t, attempt)
            .await
            .map_err(|_| AttemptFailure::timed_out())?,
        None => attempt.await,
    }
}

/// The response the service answered with, decoded and validated by the
/// wire conversion; one that fails is the verdict-invalid failure of a
/// reachable replica.
pub(super) fn decoded(
    response: pb::InterceptorResponse,
) -> Result<InterceptorResponse, AttemptFailure> {
    InterceptorResponse::try_from(response).map_err(|invalid| AttemptFailure {
        failure: CallFailure::Invalid(invalid),
        reach: Reach::Answered,
    })
}

/// The failure of a call that ended with `status`, `elapsed` after it was
/// sent under `timeout`: a timeout when the deadline is what ended it
/// ([`is_deadline`]), else a failed call that got as far as the status
/// shows ([`reach_of`]).
pub(super) fn status_failure(
    status: &tonic::Status,
    elapsed: Duration,
    timeout: Option<Duration>,
) -> AttemptFailure {
    if is_deadline(status.code(), elapsed, timeout) {
        return AttemptFailure::timed_out();
    }
    AttemptFailure::failed(format!("{:?}", status.code()), reach_of(status))
}

/// How far a call that ended with `status` got. Only a status the client
/// made from a connection error or an HTTP/2 refusal proves that no
/// handler saw the request; a status the service sent (it has no local
/// source error) means it was answered, except `UNAVAILABLE`, which a
/// server sends when it cannot serve (a transport failure).
pub(super) fn reach_of(status: &tonic::Status) -> Reach {
    let mut source = std::error::Error::source(status);
    let local = source.is_some();
    while let Some(err) = source {
        if err.downcast_ref::<tonic::ConnectError>().is_some() {
            return Reach::NeverReached;
        }
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            let refused = h2.reason() == Some(h2::Reason::REFUSED_STREAM);
            // A GOAWAY from the server reaches only the streams it did not
            // accept (those above its last stream id): not processed.
            if refused || (h2.is_go_away() && h2.is_remote()) {
                return Reach::NeverReached;
            }
        }
        source = err.source();
    }
    match status.code() {
        _ if local => Reach::Transport,
        tonic::Code::Unavailable => Reach::Transport,
        _ => Reach::Answered,
    }
}

/// Whether a failed call ended because its deadline passed (§6.3
/// `host_error:interceptor_timeout`): `DEADLINE_EXCEEDED`, or `CANCELLED`
/// once the deadline has passed. A service that honours `grpc-timeout`
/// gives up on the call when the deadline it was sent expires; grpcio and
/// grpc-js then reset the stream, which reads as `CANCELLED`, and that reset
/// can arrive a moment before the host's own timer fires. The service's
/// deadline starts when it receives the call, so its reset never arrives
/// before `timeout` has elapsed here.
fn is_deadline(code: tonic::Code, elapsed: Duration, timeout: Option<Duration>) -> bool {
    match code {
        tonic::Code::DeadlineExceeded => true,
        tonic::Code::Cancelled => timeout.is_some_and(|t| elapsed >= t),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn a_cancel_at_the_deadline_is_a_timeout() {
        let t = Some(Duration::from_millis(400));
        assert!(is_deadline(Code::DeadlineExceeded, Duration::ZERO, t));
        assert!(is_deadline(Code::Cancelled, Duration::from_millis(400), t));
        assert!(is_deadline(Code::Cancelled, Duration::from_millis(401), t));
        assert!(!is_deadline(Code::Cancelled, Duration::from_millis(399), t));
        assert!(!is_deadline(Code::Cancelled, Duration::from_secs(9), None));
        assert!(!is_deadline(Code::Unavailable, Duration::from_secs(9), t));
        assert!(!is_deadline(Code::Internal, Duration::from_secs(9), t));
    }

    #[test]
    fn a_status_the_service_sent_was_answered_unless_it_is_unavailable() {
        let t = Some(Duration::from_secs(1));
        let sent = |code| status_failure(&tonic::Status::new(code, ""), Duration::ZERO, t);
        let denied = sent(Code::PermissionDenied);
        assert_eq!(denied.reach, Reach::Answered);
        assert_eq!(
            denied.failure,
            CallFailure::Failed("PermissionDenied".into())
        );
        assert_eq!(sent(Code::Unavailable).reach, Reach::Transport);
        let late = sent(Code::DeadlineExceeded);
        assert_eq!(
            (late.failure, late.reach),
            (CallFailure::TimedOut, Reach::TimedOut)
        );
    }
}
