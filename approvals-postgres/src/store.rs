//! [`PostgresStore`]: the [`ApprovalStore`] of a service whose instances
//! share one PostgreSQL database.
//!
//! Every write that changes a request ends with `pg_notify` on
//! [`CHANNEL`] (carrying the request's queue id) in the same statement or
//! transaction, so a change is announced exactly when it commits. Each
//! instance `LISTEN`s on one dedicated connection and turns notifications
//! into [`StoreChange`]s; when that connection is lost, sqlx reconnects it
//! and the instance re-reads the whole pending set ([`StoreChange::Resync`]),
//! since notifications sent meanwhile are lost.
//!
//! Each instance renews a lease (a heartbeat row in `approval_instances`)
//! every third of [`PostgresOptions::lease`], and on the same tick closes
//! what time closes: requests past their deadline (expired), and requests
//! whose host has been away for longer than the re-attach grace (host
//! gone) — away since its link was detached, or since its instance's
//! lease ran out. These are time-driven transitions; decisions and every
//! other change are pushed, never polled.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookwire::approval::{StreamRequest, StreamResolution};
use hookwire::{InterceptionPoint, pb};
use hookwire_approvals::store::{EXPIRY_TOLERANCE, MAX_SEEN};
use hookwire_approvals::{
    Acceptance, ApprovalStore, ApproverIdentity, AuthMethod, CloseReason, DecisionOutcome,
    DecisionRecord, DecisionSubject, HistoryQuery, REATTACH_GRACE, ReattachFound, Refusal,
    StoreChange, StoredRequest, StoredState,
};
use prost::Message as _;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::{Error, redact_url, schema};

/// The `NOTIFY` channel every instance listens on; payload: a queue id.
pub const CHANNEL: &str = "hookwire_approvals";

/// How long an instance's lease lasts without renewal by default: an
/// instance that stops renewing is considered dead this long after its
/// last heartbeat.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Longest instance id.
pub const MAX_INSTANCE_ID: usize = 128;

/// Capacity of the change feed handed to the queue.
const CHANGE_CAPACITY: usize = 4096;

/// How a [`PostgresStore`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// How long an instance's lease lasts; renewed every third of it.
    pub lease: Duration,
    /// How long a request whose host is away stays pending for its host
    /// to re-attach it before it is withdrawn.
    pub reattach_grace: Duration,
    /// Most connections in the pool (one of them listens).
    pub max_connections: u32,
    /// How long a query waits for a free connection.
    pub acquire_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            lease: DEFAULT_LEASE,
            reattach_grace: REATTACH_GRACE,
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
        }
    }
}

/// The shared store of an approval service's instances, in PostgreSQL.
/// Dropping it stops its listener and lease (the instance then counts as
/// dead once its lease runs out) and closes its connections.
pub struct PostgresStore {
    pool: PgPool,
    instance: String,
    /// This start's number (from `approval_boots`), part of every queue
    /// id it hands out, so ids stay unique across instances and restarts.
    boot: i64,
    next: AtomicU64,
    changes: broadcast::Sender<StoreChange>,
    options: PostgresOptions,
    tasks: Vec<AbortHandle>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's options hold the password: never printed.
        f.debug_struct("PostgresStore")
            .field("instance", &self.instance)
            .field("boot", &self.boot)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user[:password]@host:port/db`) as
    /// instance `instance_id`, brings the schema up to date, and starts
    /// listening and renewing the instance's lease. Default
    /// [`PostgresOptions`]. Must be called within a tokio runtime.
    pub async fn connect(url: &str, instance_id: impl Into<String>) -> Result<Self, Error> {
        Self::connect_with(url, instance_id, PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with `options`.
    pub async fn connect_with(
        url: &str,
        instance_id: impl Into<String>,
        options: PostgresOptions,
    ) -> Result<Self, Error> {
        let instance = instance_id.into();
        if instance.is_empty() || instance.chars().count() > MAX_INSTANCE_ID {
            return Err(Error::InstanceId {
                max: MAX_INSTANCE_ID,
                len: instance.chars().count(),
            });
        }
        let connect = PgConnectOptions::from_str(url).map_err(|e| Error::InvalidUrl {
            redacted: redact_url(url),
            reason: e.to_string(),
        })?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(2))
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|source| Error::Connect {
                redacted: redact_url(url),
                source,
            })?;
        schema::migrate(&pool).await?;
        let boot: i64 = sqlx::query_scalar("SELECT nextval('approval_boots')")
            .fetch_one(&pool)
            .await?;
        // A restarted instance holds none of the links it held before:
        // their requests become away (and re-attachable) from now.
        sqlx::query(
            "WITH me AS (
                 INSERT INTO approval_instances (id) VALUES ($1)
                 ON CONFLICT (id) DO UPDATE SET started_at = now(), heartbeat = now()
                 RETURNING id
             ), released AS (
                 UPDATE approval_requests SET host_instance = NULL, detached_at = now()
                 WHERE state = 'pending' AND host_instance = $1
                 RETURNING id
             )
             SELECT pg_notify($2, id) FROM released",
        )
        .bind(&instance)
        .bind(CHANNEL)
        .execute(&pool)
        .await?;
        let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
        // Listening before returning: the queue subscribes, then reads.
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(CHANNEL).await?;
        let listen = tokio::spawn(listen(listener, changes.clone())).abort_handle();
        let lease = tokio::spawn(keep_lease(pool.clone(), instance.clone(), options.clone()))
            .abort_handle();
        tracing::info!(
            instance = %instance,
            boot,
            database = %redact_url(url),
            "approval store connected"
        );
        Ok(Self {
            pool,
            instance,
            boot,
            next: AtomicU64::new(0),
            changes,
            options,
            tasks: vec![listen, lease],
        })
    }

    /// The pool, for operators' own queries (reading the audit log with
    /// SQL, say).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The options it runs with.
    pub fn options(&self) -> &PostgresOptions {
        &self.options
    }

    /// Reads one request's row.
    async fn row(&self, id: &str) -> Result<Option<PgRow>, Error> {
        Ok(sqlx::query(&format!("{SELECT_REQUEST} WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }
}

/// Forwards notifications to the change feed; a lost connection (sqlx
/// reconnects it) means changes were missed: resync.
async fn listen(mut listener: PgListener, changes: broadcast::Sender<StoreChange>) {
    loop {
        match listener.try_recv().await {
            Ok(Some(n)) => {
                let _ = changes.send(StoreChange::Request(n.payload().to_owned()));
            }
            Ok(None) => {
                tracing::warn!("approval store listener reconnected; resynchronising");
                let _ = changes.send(StoreChange::Resync);
            }
            Err(e) => {
                tracing::warn!(error = %e, "approval store listener failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                let _ = changes.send(StoreChange::Resync);
            }
        }
    }
}

/// Renews the lease and closes what time closes, every third of the lease.
async fn keep_lease(pool: PgPool, instance: String, options: PostgresOptions) {
    let period = (options.lease / 3).max(Duration::from_millis(50));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = renew_and_sweep(&pool, &instance, &options).await {
            tracing::warn!(error = %e, "approval lease renewal failed");
        }
    }
}

async fn renew_and_sweep(
    pool: &PgPool,
    instance: &str,
    options: &PostgresOptions,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO approval_instances (id) VALUES ($1)
         ON CONFLICT (id) DO UPDATE SET heartbeat = now()",
    )
    .bind(instance)
    .execute(pool)
    .await?;
    let swept: Vec<(String, String)> = sqlx::query_as(
        "WITH swept AS (
             UPDATE approval_requests r
             SET state = 'closed', closed_at = now(),
                 close_reason = CASE WHEN r.deadline <= now() THEN 'expired' ELSE 'host_gone' END
             WHERE r.state = 'pending' AND (
                 r.deadline <= now()
                 OR (r.host_instance IS NULL AND r.detached_at <= now() - $1 * interval '1 millisecond')
                 OR (r.host_instance IS NOT NULL AND NOT EXISTS (
                     SELECT 1 FROM approval_instances i
                     WHERE i.id = r.host_instance
                       AND i.heartbeat > now() - ($1 + $2) * interval '1 millisecond'))
             )
             RETURNING r.id, r.close_reason
         )
         SELECT id, close_reason FROM swept, LATERAL (SELECT pg_notify($3, swept.id)) n",
    )
    .bind(millis(options.reattach_grace))
    .bind(millis(options.lease))
    .bind(CHANNEL)
    .fetch_all(pool)
    .await?;
    for (id, reason) in swept {
        tracing::info!(%id, reason, "approval closed by the store");
    }
    Ok(())
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn from_micros(us: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

/// The columns every read of a request takes, in [`read_request`]'s order.
const SELECT_REQUEST: &str = "SELECT id, host, host_request_id, host_instance, request, \
     seen_names, seen_methods, state, close_reason, close_note, resolution, approver, \
     approver_method, \
     GREATEST(0, (EXTRACT(EPOCH FROM deadline - clock_timestamp()) * 1000))::bigint AS remaining_ms \
     FROM approval_requests";

fn corrupt(id: &str, reason: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        id: id.to_owned(),
        reason: reason.to_string(),
    }
}

/// The time left of a row's request: what the database counted, less the
/// time since the query was sent (`asked`), so that the latency of the
/// query (and of its transaction's commit) never lengthens a deadline.
fn remaining(row: &PgRow, asked: Instant) -> Result<Duration, Error> {
    let counted: i64 = row.try_get("remaining_ms")?;
    Ok(Duration::from_millis(u64::try_from(counted).unwrap_or(0)).saturating_sub(asked.elapsed()))
}

fn read_request(row: &PgRow, asked: Instant) -> Result<StoredRequest, Error> {
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

fn identity(name: String, method: &str) -> ApproverIdentity {
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

fn read_state(row: &PgRow, asked: Instant) -> Result<StoredState, Error> {
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
fn refusal(state: &str, close_reason: Option<&str>, past_deadline: bool) -> Refusal {
    match (state, close_reason) {
        ("decided", _) => Refusal::AlreadyResolved,
        ("closed", Some("expired")) => Refusal::Expired,
        ("closed", _) => Refusal::Withdrawn,
        _ if past_deadline => Refusal::Expired,
        _ => Refusal::Withdrawn,
    }
}

async fn why_not(
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

/// Adds `record` to the audit log; the request's columns come from the
/// record or, for a request this instance did not mirror, from its row.
async fn insert_audit(
    executor: impl sqlx::Executor<'_, Database = Postgres>,
    record: &DecisionRecord,
) -> Result<(), Error> {
    let (path, value) = outcome_columns(&record.outcome);
    let subject = record.subject.as_ref();
    sqlx::query(
        "INSERT INTO approval_decisions (request_id, decided_at, approver, approver_method,
             instance, outcome, edited_path, edited_value, acceptance, host, host_request_id,
             context_identity, interception_point, session_id, tool_name, reason)
         SELECT $1, timestamptz 'epoch' + $2 * interval '1 microsecond', $3, $4, $5, $6, $7, $8,
             $9, COALESCE($10, r.host), COALESCE($11, r.host_request_id),
             CASE WHEN $10 IS NULL THEN r.context_identity ELSE $12 END,
             COALESCE($13, r.interception_point), COALESCE($14, r.session_id),
             CASE WHEN $10 IS NULL THEN r.tool_name ELSE $15 END,
             CASE WHEN $10 IS NULL THEN r.reason ELSE $16 END
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
        acceptance: read_acceptance(&acceptance),
        request_id,
    })
}

#[async_trait::async_trait]
impl ApprovalStore for PostgresStore {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("q-{}-{n}", self.boot)
    }

    fn is_shared(&self) -> bool {
        true
    }

    async fn insert(&self, request: StoredRequest) -> Result<(), hookwire_approvals::Error> {
        let StoredRequest {
            id,
            host,
            host_request_id,
            request,
            remaining,
            ..
        } = request;
        let stream = StreamRequest {
            request_id: host_request_id,
            request,
            deadline: Duration::ZERO,
        };
        let wire = pb::ApprovalRequest::from(&stream);
        let r = &stream.request;
        sqlx::query(
            "WITH added AS (
                 INSERT INTO approval_requests (id, host, host_request_id, host_instance,
                     context_identity, interception_point, session_id, tool_name, reason,
                     request, deadline)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                     now() + $11 * interval '1 millisecond')
                 RETURNING id
             )
             SELECT pg_notify($12, id) FROM added",
        )
        .bind(&id)
        .bind(&host)
        .bind(&stream.request_id)
        .bind(&self.instance)
        .bind(&r.context_identity)
        .bind(r.interception_point.as_str())
        .bind(r.context.session_id())
        .bind(r.context.tool_name())
        .bind(&r.verdict.reason)
        .bind(wire.encode_to_vec())
        .bind(millis(remaining))
        .bind(CHANNEL)
        .execute(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(())
    }

    async fn decide(
        &self,
        record: &DecisionRecord,
        resolution: &StreamResolution,
    ) -> Result<Result<(), Refusal>, hookwire_approvals::Error> {
        let mut tx = self.pool.begin().await.map_err(Error::from)?;
        let wire = pb::ApprovalResolution::from(resolution);
        // Row-locked: of two instances deciding at once, the second waits
        // for the first to commit, then finds the row no longer pending.
        let taken = sqlx::query(
            "UPDATE approval_requests
             SET state = 'decided', decided_at = now(), approver = $2, approver_method = $3,
                 decided_on = $4, resolution = $5
             WHERE id = $1 AND state = 'pending' AND deadline > now()
             RETURNING id",
        )
        .bind(&record.request_id)
        .bind(record.approver.name())
        .bind(record.approver.method().as_str())
        .bind(&self.instance)
        .bind(wire.encode_to_vec())
        .fetch_optional(&mut *tx)
        .await
        .map_err(Error::from)?;
        if taken.is_none() {
            let why = why_not(&mut *tx, &record.request_id).await?;
            tx.rollback().await.map_err(Error::from)?;
            return Ok(Err(why));
        }
        insert_audit(&mut *tx, record).await?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(&record.request_id)
            .execute(&mut *tx)
            .await
            .map_err(Error::from)?;
        tx.commit().await.map_err(Error::from)?;
        Ok(Ok(()))
    }

    async fn seen(
        &self,
        id: &str,
        approver: &ApproverIdentity,
    ) -> Result<Result<(), Refusal>, hookwire_approvals::Error> {
        let row: Option<(String, Option<String>, bool, bool)> = sqlx::query_as(
            "WITH seen AS (
                 UPDATE approval_requests
                 SET seen_names = array_append(seen_names, $2),
                     seen_methods = array_append(seen_methods, $3)
                 WHERE id = $1 AND state = 'pending' AND NOT ($2 = ANY(seen_names))
                   AND cardinality(seen_names) < $4
                 RETURNING id
             ), told AS (SELECT pg_notify($5, id) FROM seen)
             SELECT state, close_reason, deadline <= now(), EXISTS (SELECT 1 FROM told)
             FROM approval_requests WHERE id = $1",
        )
        .bind(id)
        .bind(approver.name())
        .bind(approver.method().as_str())
        .bind(i32::try_from(MAX_SEEN).unwrap_or(i32::MAX))
        .bind(CHANNEL)
        .fetch_optional(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(match row {
            None => Err(Refusal::UnknownRequest),
            Some((state, ..)) if state == "pending" => Ok(()),
            Some((state, reason, past, _)) => Err(refusal(&state, reason.as_deref(), past)),
        })
    }

    async fn close(
        &self,
        id: &str,
        reason: CloseReason,
        note: Option<&str>,
    ) -> Result<bool, hookwire_approvals::Error> {
        let closed: Option<(String,)> = sqlx::query_as(
            "WITH closed AS (
                 UPDATE approval_requests
                 SET state = 'closed', closed_at = now(), close_reason = $2, close_note = $3
                 WHERE id = $1 AND state = 'pending' AND CASE $2
                     WHEN 'expired' THEN deadline <= now() + $6 * interval '1 millisecond'
                     WHEN 'failed' THEN true
                     ELSE host_instance = $4
                 END
                 RETURNING id
             )
             SELECT id FROM closed, LATERAL (SELECT pg_notify($5, closed.id)) n",
        )
        .bind(id)
        .bind(reason.as_str())
        .bind(note)
        .bind(&self.instance)
        .bind(CHANNEL)
        .bind(millis(EXPIRY_TOLERANCE))
        .fetch_optional(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(closed.is_some())
    }

    async fn detach(&self, ids: &[String]) -> Result<(), hookwire_approvals::Error> {
        sqlx::query(
            "WITH away AS (
                 UPDATE approval_requests SET host_instance = NULL, detached_at = now()
                 WHERE id = ANY($1) AND state = 'pending' AND host_instance = $2
                 RETURNING id
             )
             SELECT pg_notify($3, id) FROM away",
        )
        .bind(ids)
        .bind(&self.instance)
        .bind(CHANNEL)
        .execute(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(())
    }

    async fn reattach(
        &self,
        host: &str,
        host_request_id: &str,
        context_identity: Option<&str>,
        point: InterceptionPoint,
    ) -> Result<Option<ReattachFound>, hookwire_approvals::Error> {
        let mut tx = self.pool.begin().await.map_err(Error::from)?;
        let found: Option<(String,)> = sqlx::query_as(
            "WITH found AS (
                 SELECT id FROM approval_requests
                 WHERE host = $1 AND host_request_id = $2
                   AND context_identity IS NOT DISTINCT FROM $3 AND interception_point = $4
                   AND state IN ('pending', 'decided') AND deadline > now()
                 ORDER BY seq DESC LIMIT 1
                 FOR UPDATE
             )
             UPDATE approval_requests r SET host_instance = $5, detached_at = NULL
             FROM found WHERE r.id = found.id
             RETURNING r.id",
        )
        .bind(host)
        .bind(host_request_id)
        .bind(context_identity)
        .bind(point.as_str())
        .bind(&self.instance)
        .fetch_optional(&mut *tx)
        .await
        .map_err(Error::from)?;
        let Some((id,)) = found else {
            tx.rollback().await.map_err(Error::from)?;
            return Ok(None);
        };
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(Error::from)?;
        let asked = Instant::now();
        let row = sqlx::query(&format!("{SELECT_REQUEST} WHERE id = $1"))
            .bind(&id)
            .fetch_one(&mut *tx)
            .await
            .map_err(Error::from)?;
        tx.commit().await.map_err(Error::from)?;
        let found = match read_state(&row, asked)? {
            StoredState::Pending { request, .. } => ReattachFound::Pending(request),
            StoredState::Decided { id, resolution, .. } => {
                let remaining = remaining(&row, asked)?;
                ReattachFound::Decided {
                    id,
                    resolution,
                    remaining,
                }
            }
            StoredState::Closed { .. } => return Ok(None),
        };
        Ok(Some(found))
    }

    async fn state(&self, id: &str) -> Result<Option<StoredState>, hookwire_approvals::Error> {
        let asked = Instant::now();
        match self.row(id).await? {
            None => Ok(None),
            Some(row) => Ok(Some(read_state(&row, asked)?)),
        }
    }

    async fn pending(&self) -> Result<Vec<StoredRequest>, hookwire_approvals::Error> {
        let asked = Instant::now();
        let rows = sqlx::query(&format!(
            "{SELECT_REQUEST} WHERE state = 'pending' ORDER BY seq"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(rows
            .iter()
            .map(|row| read_request(row, asked))
            .collect::<Result<Vec<_>, _>>()?)
    }

    async fn audit(&self, record: &DecisionRecord) -> Result<(), hookwire_approvals::Error> {
        insert_audit(&self.pool, record).await?;
        Ok(())
    }

    async fn history(
        &self,
        query: &HistoryQuery,
    ) -> Result<Vec<DecisionRecord>, hookwire_approvals::Error> {
        let rows = sqlx::query(
            "SELECT request_id, approver, approver_method, instance, outcome, edited_path,
                 edited_value, acceptance, host, host_request_id, context_identity,
                 interception_point, session_id, tool_name, reason,
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
        .fetch_all(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(rows
            .iter()
            .map(read_record)
            .collect::<Result<Vec<_>, _>>()?)
    }

    fn subscribe(&self) -> broadcast::Receiver<StoreChange> {
        self.changes.subscribe()
    }
}
