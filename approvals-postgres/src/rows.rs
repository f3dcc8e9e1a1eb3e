//! Reading requests back: the columns every read takes and how a row
//! becomes a [`StoredRequest`] or [`StoredState`], the time left of its
//! deadline (as the database counts it), and why a request that is no
//! longer decidable is refused. Also the time conversions the statements
//! share.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookwire::approval::{StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire_approvals::{
    ApproverIdentity, AuthMethod, CloseReason, Refusal, StoredRequest, StoredState,
};
use prost::Message as _;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row};
use tokio::time::Instant;

use crate::error::Error;

/// Milliseconds, as the statements bind durations.
pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Microseconds since the epoch, as the audit log binds times.
pub(crate) fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// [`micros`] read back.
pub(crate) fn from_micros(us: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

/// The columns every read of a request takes, in [`read_request`]'s order.
pub(crate) const SELECT_REQUEST: &str = "SELECT id, host, host_request_id, host_instance, request, \
     seen_names, seen_methods, state, close_reason, close_note, resolution, approver, \
     approver_method, \
     GREATEST(0, (EXTRACT(EPOCH FROM deadline - clock_timestamp()) * 1000))::bigint AS remaining_ms \
     FROM approval_requests";

/// A row that does not decode.
pub(crate) fn corrupt(id: &str, reason: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        id: id.to_owned(),
        reason: reason.to_string(),
    }
}

/// The time left of a row's request: what the database counted, less the
/// time since the query was sent (`asked`), so that the latency of the
/// query (and of its transaction's commit) never lengthens a deadline.
pub(crate) fn remaining(row: &PgRow, asked: Instant) -> Result<Duration, Error> {
    let counted: i64 = row.try_get("remaining_ms")?;
    Ok(Duration::from_millis(u64::try_from(counted).unwrap_or(0)).saturating_sub(asked.elapsed()))
}

/// A pending row as the queue reads it; `asked`: when the query was sent.
pub(crate) fn read_request(row: &PgRow, asked: Instant) -> Result<StoredRequest, Error> {
    let id: String = row.try_get("id")?;
    let bytes: Vec<u8> = row.try_get("request")?;
    let wire = pb::ApprovalRequest::decode(bytes.as_slice()).map_err(|e| corrupt(&id, e))?;
    let request = StreamRequest::try_from(wire).map_err(|e| corrupt(&id, e))?;
    let names: Vec<String> = row.try_get("seen_names")?;
    let methods: Vec<String> = row.try_get("seen_methods")?;
    let remaining = remaining(row, asked)?;
    Ok(StoredRequest {
        host: row.try_get("host")?,
        host_request_id: row.try_get("host_request_id")?,
        request: request.request,
        remaining,
        seen_by: names
            .into_iter()
            .zip(methods)
            .map(|(name, method)| identity(name, &method))
            .collect(),
        id,
    })
}

/// An approver as stored: a name and how it was verified.
pub(crate) fn identity(name: String, method: &str) -> ApproverIdentity {
    ApproverIdentity::verified(
        name,
        AuthMethod::parse(method).unwrap_or(AuthMethod::Unverified),
    )
}

fn close_reason(s: &str) -> Option<CloseReason> {
    Some(match s {
        "expired" => CloseReason::Expired,
        "cancelled" => CloseReason::Cancelled,
        "host_gone" => CloseReason::HostGone,
        "failed" => CloseReason::Failed,
        _ => return None,
    })
}

/// Where a row's request stands.
pub(crate) fn read_state(row: &PgRow, asked: Instant) -> Result<StoredState, Error> {
    let id: String = row.try_get("id")?;
    let state: String = row.try_get("state")?;
    match state.as_str() {
        "pending" => Ok(StoredState::Pending {
            request: read_request(row, asked)?,
            host_instance: row.try_get("host_instance")?,
        }),
        "decided" => {
            let (resolution, approver) = read_decision(row)?;
            Ok(StoredState::Decided {
                id,
                resolution,
                approver,
            })
        }
        "closed" => {
            let reason: String = row.try_get("close_reason")?;
            Ok(StoredState::Closed {
                reason: close_reason(&reason)
                    .ok_or_else(|| corrupt(&id, "unknown close reason"))?,
                host_request_id: row.try_get("host_request_id")?,
                note: row.try_get("close_note")?,
                id,
            })
        }
        other => Err(corrupt(&id, format!("unknown state {other:?}"))),
    }
}

fn read_decision(row: &PgRow) -> Result<(StreamResolution, ApproverIdentity), Error> {
    let id: String = row.try_get("id")?;
    let bytes: Option<Vec<u8>> = row.try_get("resolution")?;
    let bytes = bytes.ok_or_else(|| corrupt(&id, "decided without a resolution"))?;
    let wire = pb::ApprovalResolution::decode(bytes.as_slice()).map_err(|e| corrupt(&id, e))?;
    let mut resolution = StreamResolution::from(wire);
    resolution.request_id = row.try_get("host_request_id")?;
    let name: Option<String> = row.try_get("approver")?;
    let method: Option<String> = row.try_get("approver_method")?;
    let approver = identity(name.unwrap_or_default(), method.as_deref().unwrap_or(""));
    Ok((resolution, approver))
}

/// Why a decision on a row that is not (or no longer) decidable is refused.
pub(crate) fn refusal(state: &str, close_reason: Option<&str>, past_deadline: bool) -> Refusal {
    match (state, close_reason) {
        ("decided", _) => Refusal::AlreadyResolved,
        ("closed", Some("expired")) => Refusal::Expired,
        ("closed", _) => Refusal::Withdrawn,
        _ if past_deadline => Refusal::Expired,
        _ => Refusal::Withdrawn,
    }
}

/// Why request `id` is not decidable (read in the deciding transaction).
pub(crate) async fn why_not(
    executor: impl sqlx::Executor<'_, Database = Postgres>,
    id: &str,
) -> Result<Refusal, Error> {
    let row: Option<(String, Option<String>, bool)> = sqlx::query_as(
        "SELECT state, close_reason, deadline <= now() FROM approval_requests WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(executor)
    .await?;
    Ok(match row {
        None => Refusal::UnknownRequest,
        Some((state, reason, past)) => refusal(&state, reason.as_deref(), past),
    })
}
