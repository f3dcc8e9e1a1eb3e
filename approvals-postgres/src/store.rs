//! [`PostgresStore`]: the [`ApprovalStore`] of a service whose instances
//! share one PostgreSQL database — its connection, and the statements
//! that write requests and decisions.
//!
//! Every statement that changes a request announces it on the change feed
//! in the same statement or transaction ([`notify`](crate::notify)). A
//! decision is one transaction: the row update that only succeeds while
//! the request is pending and within its deadline (the row lock makes a
//! concurrent second decision wait, then find it decided), its audit row
//! ([`audit`](crate::audit)) and its announcement. Leases, the store's
//! housekeeping and re-attach are in [`lease`](crate::lease); reading
//! rows back is in [`rows`](crate::rows).

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire::approval::{StreamRequest, StreamResolution};
use hookwire::pb;
use hookwire_approvals::store::{EXPIRY_TOLERANCE, MAX_SEEN};
use hookwire_approvals::{
    ApprovalStore, ApproverIdentity, CloseReason, DecisionRecord, HistoryQuery, REATTACH_GRACE,
    ReattachFound, Refusal, StoreChange, StoredRequest, StoredState,
};
use prost::Message as _;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::error::Error;
use crate::notify::{self, CHANNEL, announce};
use crate::redact::redact_url;
use crate::rows::{SELECT_REQUEST, millis, read_request, read_state, refusal, why_not};
use crate::{audit, lease, schema};

/// How long an instance's lease lasts without renewal by default: an
/// instance that stops renewing is considered dead this long after its
/// last heartbeat.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Longest instance id.
pub const MAX_INSTANCE_ID: usize = 128;

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
        lease::register(&pool, &instance).await?;
        let (changes, listening) = notify::listen(&pool).await?;
        let terms = lease::Terms {
            lease: options.lease,
            reattach_grace: options.reattach_grace,
        };
        let leasing = lease::keep(pool.clone(), instance.clone(), terms);
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
            tasks: vec![listening, leasing],
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

#[async_trait::async_trait]
impl ApprovalStore for PostgresStore {
    fn instance(&self) -> &str {
        &self.instance
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("q-{}-{n}", self.boot)
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
        audit::insert(&mut *tx, record).await?;
        announce(&mut *tx, &record.request_id).await?;
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
        Ok(lease::detach(&self.pool, &self.instance, ids).await?)
    }

    async fn reattach(
        &self,
        host: &str,
        host_request_id: &str,
        context_identity: Option<&str>,
        point: InterceptionPoint,
    ) -> Result<Option<ReattachFound>, hookwire_approvals::Error> {
        let found = lease::reattach(
            &self.pool,
            &self.instance,
            host,
            host_request_id,
            context_identity,
            point,
        )
        .await?;
        Ok(found)
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
        audit::insert(&self.pool, record).await?;
        Ok(())
    }

    async fn history(
        &self,
        query: &HistoryQuery,
    ) -> Result<Vec<DecisionRecord>, hookwire_approvals::Error> {
        Ok(audit::history(&self.pool, query).await?)
    }

    fn subscribe(&self) -> broadcast::Receiver<StoreChange> {
        self.changes.subscribe()
    }
}
