//! The gate every decision passes, whichever front end it came through
//! (the gRPC `Watch` and `Decide` calls, the web page): the approver's
//! rules against the pending request, and the audit of a refusal.

use hookwire::approval::ApprovalResolution;

use crate::auth::{ApproverAccess, Denial};
use crate::events::ApproverIdentity;
use crate::queue::ApprovalQueue;

/// Whether `approver` may make `resolution` on request `id`. An id that
/// is not pending passes (the queue refuses it by name). A refusal is
/// kept in the queue's audit log and logged; the queue does not change.
pub(crate) async fn may_decide(
    queue: &ApprovalQueue,
    approver: &ApproverAccess,
    identity: &ApproverIdentity,
    id: &str,
    resolution: &ApprovalResolution,
) -> Result<(), Denial> {
    let Some(pending) = queue.get(id) else {
        return Ok(());
    };
    let Err(rule) = approver.rules.check(&pending) else {
        return Ok(());
    };
    tracing::warn!(
        target: "hookwire::approval::audit",
        approver = %approver.name,
        request_id = id,
        rule,
        "decision refused: outside the approver's rules"
    );
    if let Err(e) = queue.audit_forbidden(id, identity, resolution).await {
        tracing::error!(request_id = id, error = %e, "could not audit a forbidden decision");
    }
    Err(Denial::OutsideRules)
}
