//! The approval service's messages on the wire: their bounds, and the
//! conversions from the queue's pending requests, changes, deliveries and
//! decision results to `hookwire.v1` messages.

use hookwire::approval::StreamRequest;
use hookwire::pb;

use crate::auth::ApproverAccess;
use crate::error::{Error, Refusal};
use crate::events::{CloseReason, HostDelivery, PendingApproval, QueueEvent};

/// Largest message an approval service accepts from a host or an approver
/// (the same bound as an interceptor's request).
pub const MAX_APPROVAL_MESSAGE_BYTES: usize = hookwire_server::DEFAULT_MAX_MESSAGE_BYTES;

/// Largest message it sends: a request it accepted plus what it adds (the
/// host's name, who has seen it). A `PendingSet` larger than this is sent
/// as several messages (one set, then `Added` events).
pub const MAX_APPROVAL_REPLY_BYTES: usize = MAX_APPROVAL_MESSAGE_BYTES + 64 * 1024;

/// The wire form of a pending request, with the time left now.
pub(super) fn pending_to_pb(p: &PendingApproval) -> pb::PendingApproval {
    pb::PendingApproval {
        request: Some(pb::ApprovalRequest::from(&StreamRequest {
            request_id: p.id.clone(),
            request: p.request.clone(),
            deadline: p.remaining(),
        })),
        host: p.host.clone(),
        seen_by: p.seen_by.clone(),
    }
}

/// The pending requests `approver` may see, as one `PendingSet` and, when
/// it would not fit in one message, `Added` events for the rest.
pub(super) fn pending_set(
    pending: &[PendingApproval],
    approver: &ApproverAccess,
) -> Vec<pb::WatchEvent> {
    use prost::Message as _;
    let budget = MAX_APPROVAL_MESSAGE_BYTES / 2;
    let mut set = Vec::new();
    let mut size = 0;
    let mut rest = Vec::new();
    for p in pending.iter().filter(|p| approver.rules.permits(p)) {
        let wire = pending_to_pb(p);
        let len = wire.encoded_len();
        if rest.is_empty() && (set.is_empty() || size + len <= budget) {
            size += len;
            set.push(wire);
        } else {
            rest.push(event(pb::watch_event::Kind::Added(wire)));
        }
    }
    let mut events = vec![event(pb::watch_event::Kind::Pending(pb::PendingSet {
        requests: set,
    }))];
    events.extend(rest);
    events
}

/// A `Watch` event of `kind`.
pub(super) fn event(kind: pb::watch_event::Kind) -> pb::WatchEvent {
    pb::WatchEvent { kind: Some(kind) }
}

/// A `Resolve` message of `kind`.
pub(super) fn down(kind: pb::service_message::Kind) -> pb::ServiceMessage {
    pb::ServiceMessage { kind: Some(kind) }
}

fn close_reason(r: CloseReason) -> pb::CloseReason {
    match r {
        CloseReason::Expired => pb::CloseReason::Expired,
        CloseReason::Cancelled => pb::CloseReason::Cancelled,
        CloseReason::HostGone => pb::CloseReason::HostGone,
        CloseReason::Failed => pb::CloseReason::Failed,
    }
}

/// The wire status of a decision's result.
pub(super) fn decision_status(result: &Result<(), Error>) -> pb::DecisionStatus {
    match result {
        Ok(()) => pb::DecisionStatus::Accepted,
        Err(Error::Refused { refusal, .. }) => match refusal {
            Refusal::UnknownRequest => pb::DecisionStatus::UnknownRequest,
            Refusal::AlreadyResolved => pb::DecisionStatus::AlreadyResolved,
            Refusal::Expired => pb::DecisionStatus::Expired,
            Refusal::Withdrawn => pb::DecisionStatus::Withdrawn,
        },
        Err(_) => pb::DecisionStatus::UnknownRequest,
    }
}

/// A queue change as the `Watch` event approvers see.
pub(super) fn queue_event_to_pb(e: QueueEvent) -> pb::WatchEvent {
    use pb::watch_event::Kind;
    event(match e {
        QueueEvent::Added(p) => Kind::Added(pending_to_pb(&p)),
        QueueEvent::Seen { id, approver } => Kind::Seen(pb::Seen {
            request_id: id,
            approver: approver.name().to_owned(),
        }),
        QueueEvent::Resolved {
            id,
            approver,
            outcome,
        } => Kind::Resolved(pb::Resolved {
            request_id: id,
            approver: approver.name().to_owned(),
            outcome: pb::ApprovalOutcome::from(outcome) as i32,
        }),
        QueueEvent::Closed { id, reason } => Kind::Closed(pb::Closed {
            request_id: id,
            reason: close_reason(reason) as i32,
        }),
    })
}

/// What the queue delivers to a host, as its `Resolve` message.
pub(super) fn delivery_to_pb(d: HostDelivery) -> pb::ServiceMessage {
    use pb::service_message::Kind;
    down(match d {
        HostDelivery::Resolution(r) => Kind::Resolution(pb::ApprovalResolution::from(&*r)),
        HostDelivery::Seen {
            request_id,
            approver,
        } => Kind::Seen(pb::Seen {
            request_id,
            approver,
        }),
        HostDelivery::Failed { request_id, reason } => {
            Kind::Failed(pb::RequestFailed { request_id, reason })
        }
    })
}
