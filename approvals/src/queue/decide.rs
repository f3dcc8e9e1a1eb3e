//! What approvers do with a pending request: say they are looking at it,
//! decide it, fail it, or be refused it by their rules; and the decision
//! audit log all of that leaves. The store takes each change first (the
//! first decision wins across instances; a store that cannot be reached
//! decides nothing), then the queue applies it here.

use std::time::{Duration, SystemTime};

use hookwire::approval::{ApprovalResolution, StreamResolution};

use super::state::{ApprovalQueue, State, refused};
use super::writes::Write;
use crate::error::{Error, Refusal};
use crate::events::{
    Acceptance, ApproverIdentity, CloseReason, DecisionOutcome, DecisionRecord, DecisionSubject,
    HistoryQuery, MAX_HISTORY,
};
use crate::store::StoredState;

impl ApprovalQueue {
    /// Records that `approver` opened request `id` (a person looking at
    /// it, not a page listing it), and tells its host and the other
    /// approvers. Repeats are recorded once.
    pub async fn seen(&self, id: &str, approver: &ApproverIdentity) -> Result<(), Error> {
        self.stored(id).await;
        if let Err(refusal) = self.inner.store.seen(id, approver).await? {
            return Err(refused(id, refusal));
        }
        self.apply_seen(&mut self.state(), id, approver);
        Ok(())
    }

    /// Decides request `id` as `approver`: the first decision for a
    /// pending request within its deadline goes to the host, unchanged,
    /// and is returned as its audit entry. Later ones are refused
    /// ([`Error::Refused`]). Both are kept in the audit log. The store
    /// takes the decision first: the first one wins across the instances
    /// sharing it, and a store that cannot be reached decides nothing
    /// ([`Error::Store`]).
    pub async fn resolve(
        &self,
        id: &str,
        approver: &ApproverIdentity,
        resolution: ApprovalResolution,
    ) -> Result<DecisionRecord, Error> {
        self.stored(id).await;
        let attempt = {
            let state = self.state();
            // Only what this instance shows its approvers is decided here:
            // front ends authorize a decision against the request they
            // read from this queue, so one not (yet) mirrored is refused.
            match state.pending.get(id) {
                None => {
                    let refusal = state.refusal_of(id);
                    let acceptance = Acceptance::Refused(refusal);
                    Err((
                        self.record(&state, id, approver, &resolution, acceptance),
                        refusal,
                    ))
                }
                Some(entry) => Ok((
                    self.record(&state, id, approver, &resolution, Acceptance::Accepted),
                    entry.host_request_id.clone(),
                )),
            }
        };
        let (mut record, host_request_id) = match attempt {
            Ok(accepted) => accepted,
            Err((record, refusal)) => {
                self.inner.store.audit(&record).await?;
                return Err(refused(id, refusal));
            }
        };
        let decided = StreamResolution {
            request_id: host_request_id,
            approver: approver.name().to_owned(),
            resolution,
        };
        match self.inner.store.decide(&record, &decided).await? {
            Ok(()) => {
                self.apply_decided(&mut self.state(), id, approver, decided);
                Ok(record)
            }
            Err(refusal) => {
                record.acceptance = Acceptance::Refused(refusal);
                self.inner.store.audit(&record).await?;
                if refusal == Refusal::Expired {
                    self.write(Write::Close {
                        id: id.to_owned(),
                        reason: CloseReason::Expired,
                    });
                }
                Err(refused(id, refusal))
            }
        }
    }

    /// Gives up on request `id`: its host fails it at once (as
    /// `host_error:approval_resolver_failed`) and approvers see it closed.
    /// For approvers that cannot decide and will not wait (a ticket system
    /// that is down, a bridge that crashed).
    pub async fn fail(&self, id: &str, reason: &str) -> Result<(), Error> {
        self.stored(id).await;
        let store = &self.inner.store;
        if !store.close(id, CloseReason::Failed, Some(reason)).await? {
            let refusal = match store.state(id).await? {
                None => Refusal::UnknownRequest,
                Some(StoredState::Decided { .. }) => Refusal::AlreadyResolved,
                Some(StoredState::Closed { reason, .. }) => Refusal::from(reason),
                Some(StoredState::Pending { .. }) => Refusal::Withdrawn,
            };
            return Err(refused(id, refusal));
        }
        self.apply_failed(&mut self.state(), id, reason);
        Ok(())
    }

    /// The decision audit log, newest first, as `query` selects it (at
    /// most [`MAX_HISTORY`] entries).
    pub async fn history(&self, query: &HistoryQuery) -> Result<Vec<DecisionRecord>, Error> {
        let query = HistoryQuery {
            limit: query.limit.min(MAX_HISTORY),
            ..query.clone()
        };
        self.inner.store.history(&query).await
    }

    /// Records in the audit log that `approver` tried to decide request
    /// `id` and the front end refused it because their rules do not allow
    /// it ([`Acceptance::Forbidden`]). The queue does not change.
    pub async fn audit_forbidden(
        &self,
        id: &str,
        approver: &ApproverIdentity,
        resolution: &ApprovalResolution,
    ) -> Result<DecisionRecord, Error> {
        let record = {
            let state = self.state();
            self.record(&state, id, approver, resolution, Acceptance::Forbidden)
        };
        tracing::info!(
            id,
            approver = approver.name(),
            "approval decision forbidden"
        );
        self.inner.store.audit(&record).await?;
        Ok(record)
    }

    /// An audit entry for a decision about `id` (pending or not).
    fn record(
        &self,
        state: &State,
        id: &str,
        approver: &ApproverIdentity,
        resolution: &ApprovalResolution,
        acceptance: Acceptance,
    ) -> DecisionRecord {
        DecisionRecord {
            request_id: id.to_owned(),
            subject: state
                .pending
                .get(id)
                .map(|e| DecisionSubject::of(&e.approval, &e.host_request_id)),
            approver: approver.clone(),
            instance: self.inner.store.instance().to_owned(),
            decided_at: now_to_the_microsecond(),
            outcome: DecisionOutcome::of(resolution),
            note: crate::events::decision_note(resolution),
            acceptance,
        }
    }
}

/// The wall clock to the microsecond: what stores keep of a decision's
/// time, so that an audit entry reads back equal to the one returned.
fn now_to_the_microsecond() -> SystemTime {
    let now = SystemTime::now();
    match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => SystemTime::UNIX_EPOCH + Duration::new(d.as_secs(), d.subsec_micros() * 1000),
        Err(_) => now,
    }
}
