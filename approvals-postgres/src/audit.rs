//! The decision audit log, `approval_decisions`: one row per decision
//! attempt — who (the verified approver and how it was verified), when,
//! which request (host, host request id, context identity, point,
//! session, tool, reason), which outcome (including the edited
//! arguments), on which instance, and whether it counted — written with
//! the decision it records or on its own, read back newest first.

use std::str::FromStr as _;

use hookwire::InterceptionPoint;
use hookwire_approvals::{
    Acceptance, DecisionOutcome, DecisionRecord, DecisionSubject, HistoryQuery, Refusal,
};
use sqlx::postgres::{PgPool, PgRow};
use sqlx::{Postgres, Row};

use crate::error::Error;
use crate::rows::{corrupt, from_micros, identity, micros};

fn outcome_columns(outcome: &DecisionOutcome) -> (Option<String>, Option<String>) {
    match outcome {
        DecisionOutcome::AllowEdited { path, value } => {
            (Some(path.clone()), Some(value.to_string()))
        }
        _ => (None, None),
    }
}

fn read_outcome(name: &str, path: Option<String>, value: Option<String>) -> DecisionOutcome {
    match name {
        "allow" => DecisionOutcome::Allow,
        "allow_edited" => DecisionOutcome::AllowEdited {
            path: path.unwrap_or_default(),
            value: value
                .and_then(|v| serde_json::from_str(&v).ok())
                .unwrap_or(serde_json::Value::Null),
        },
        "deny" => DecisionOutcome::Deny,
        "unresolved" => DecisionOutcome::Unresolved,
        _ => DecisionOutcome::Malformed,
    }
}

fn read_acceptance(name: &str) -> Acceptance {
    match name {
        "accepted" => Acceptance::Accepted,
        "forbidden" => Acceptance::Forbidden,
        "already_resolved" => Acceptance::Refused(Refusal::AlreadyResolved),
        "expired" => Acceptance::Refused(Refusal::Expired),
        "withdrawn" => Acceptance::Refused(Refusal::Withdrawn),
        _ => Acceptance::Refused(Refusal::UnknownRequest),
    }
}

/// Adds `record` to the audit log (within `executor`'s transaction); the
/// request's columns come from the record or, for a request this instance
/// did not mirror, from its row.
pub(crate) async fn insert(
    executor: impl sqlx::Executor<'_, Database = Postgres>,
    record: &DecisionRecord,
) -> Result<(), Error> {
    let (path, value) = outcome_columns(&record.outcome);
    let subject = record.subject.as_ref();
    sqlx::query(
        "INSERT INTO approval_decisions (request_id, decided_at, approver, approver_method,
             instance, outcome, edited_path, edited_value, acceptance, host, host_request_id,
             context_identity, interception_point, session_id, tool_name, reason, note)
         SELECT $1, timestamptz 'epoch' + $2 * interval '1 microsecond', $3, $4, $5, $6, $7, $8,
             $9, COALESCE($10, r.host), COALESCE($11, r.host_request_id),
             CASE WHEN $10 IS NULL THEN r.context_identity ELSE $12 END,
             COALESCE($13, r.interception_point), COALESCE($14, r.session_id),
             CASE WHEN $10 IS NULL THEN r.tool_name ELSE $15 END,
             CASE WHEN $10 IS NULL THEN r.reason ELSE $16 END, $17
         FROM (SELECT 1) one LEFT JOIN approval_requests r ON r.id = $1",
    )
    .bind(&record.request_id)
    .bind(micros(record.decided_at))
    .bind(record.approver.name())
    .bind(record.approver.method().as_str())
    .bind(&record.instance)
    .bind(record.outcome.as_str())
    .bind(path)
    .bind(value)
    .bind(record.acceptance.as_str())
    .bind(subject.map(|s| s.host.clone()))
    .bind(subject.map(|s| s.host_request_id.clone()))
    .bind(subject.and_then(|s| s.context_identity.clone()))
    .bind(subject.map(|s| s.interception_point.as_str()))
    .bind(subject.map(|s| s.session_id.clone()))
    .bind(subject.and_then(|s| s.tool_name.clone()))
    .bind(subject.and_then(|s| s.reason.clone()))
    .bind(&record.note)
    .execute(executor)
    .await?;
    Ok(())
}

fn read_record(row: &PgRow) -> Result<DecisionRecord, Error> {
    let request_id: String = row.try_get("request_id")?;
    let host: Option<String> = row.try_get("host")?;
    let point: Option<String> = row.try_get("interception_point")?;
    let subject = match (host, point) {
        (Some(host), Some(point)) => Some(DecisionSubject {
            host,
            host_request_id: row
                .try_get::<Option<String>, _>("host_request_id")?
                .unwrap_or_default(),
            context_identity: row.try_get("context_identity")?,
            interception_point: InterceptionPoint::from_str(&point)
                .map_err(|_| corrupt(&request_id, "unknown interception point"))?,
            session_id: row
                .try_get::<Option<String>, _>("session_id")?
                .unwrap_or_default(),
            tool_name: row.try_get("tool_name")?,
            reason: row.try_get("reason")?,
        }),
        _ => None,
    };
    let method: String = row.try_get("approver_method")?;
    let outcome: String = row.try_get("outcome")?;
    let acceptance: String = row.try_get("acceptance")?;
    Ok(DecisionRecord {
        subject,
        approver: identity(row.try_get("approver")?, &method),
        instance: row.try_get("instance")?,
        decided_at: from_micros(row.try_get("decided_us")?),
        outcome: read_outcome(
            &outcome,
            row.try_get("edited_path")?,
            row.try_get("edited_value")?,
        ),
        note: row.try_get("note")?,
        acceptance: read_acceptance(&acceptance),
        request_id,
    })
}

/// The audit log, newest first, as `query` selects it.
pub(crate) async fn history(
    pool: &PgPool,
    query: &HistoryQuery,
) -> Result<Vec<DecisionRecord>, Error> {
    let rows = sqlx::query(
        "SELECT request_id, approver, approver_method, instance, outcome, edited_path,
             edited_value, acceptance, host, host_request_id, context_identity,
             interception_point, session_id, tool_name, reason, note,
             (EXTRACT(EPOCH FROM decided_at) * 1000000)::bigint AS decided_us
         FROM approval_decisions
         WHERE ($1::bigint IS NULL OR decided_at < timestamptz 'epoch' + $1 * interval '1 microsecond')
           AND ($2::text IS NULL OR approver = $2)
           AND ($3::text IS NULL OR request_id = $3)
         ORDER BY decided_at DESC, seq DESC
         LIMIT $4",
    )
    .bind(query.before.map(micros))
    .bind(&query.approver)
    .bind(&query.request_id)
    .bind(i64::try_from(query.limit).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?;
    rows.iter().map(read_record).collect()
}
