//! Leases and re-attach: how requests outlive the instance that held
//! their host's link.
//!
//! Each instance holds a lease (its heartbeat row in
//! `approval_instances`), renewed every third of
//! `PostgresOptions::lease`, and on the same tick closes what time
//! closes: requests past their deadline (expired), and requests whose
//! host has been away for longer than the re-attach grace (host gone) —
//! away since its link was detached, or since its instance's lease ran
//! out. These are time-driven transitions; decisions and every other
//! change are pushed, never polled. A host whose link went away with its
//! instance re-attaches its requests on any instance ([`reattach`]); a
//! restarted instance adopts nothing of its previous life ([`register`]).

use std::time::Duration;

use hookwire::InterceptionPoint;
use hookwire_approvals::{ReattachFound, StoredState};
use sqlx::postgres::PgPool;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::error::Error;
use crate::notify::{CHANNEL, announce};
use crate::rows::{SELECT_REQUEST, millis, read_state, remaining};

/// Registers `instance` (a fresh lease) and releases the links its
/// previous life held: their requests become away, and re-attachable,
/// from now.
pub(crate) async fn register(pool: &PgPool, instance: &str) -> Result<(), Error> {
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
    .bind(instance)
    .bind(CHANNEL)
    .execute(pool)
    .await?;
    Ok(())
}

/// How long a lease lasts, and how long a request whose host is away
/// waits for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terms {
    pub(crate) lease: Duration,
    pub(crate) reattach_grace: Duration,
}

/// Starts renewing `instance`'s lease and closing what time closes.
pub(crate) fn keep(pool: PgPool, instance: String, terms: Terms) -> AbortHandle {
    tokio::spawn(keep_lease(pool, instance, terms)).abort_handle()
}

/// Renews the lease and closes what time closes, every third of the lease.
async fn keep_lease(pool: PgPool, instance: String, terms: Terms) {
    let period = (terms.lease / 3).max(Duration::from_millis(50));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = renew_and_sweep(&pool, &instance, terms).await {
            tracing::warn!(error = %e, "approval lease renewal failed");
        }
    }
}

async fn renew_and_sweep(pool: &PgPool, instance: &str, terms: Terms) -> Result<(), Error> {
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
    .bind(millis(terms.reattach_grace))
    .bind(millis(terms.lease))
    .bind(CHANNEL)
    .fetch_all(pool)
    .await?;
    for (id, reason) in swept {
        tracing::info!(%id, reason, "approval closed by the store");
    }
    Ok(())
}

/// Leaves requests `ids` of `instance` pending without a host link.
pub(crate) async fn detach(pool: &PgPool, instance: &str, ids: &[String]) -> Result<(), Error> {
    sqlx::query(
        "WITH away AS (
             UPDATE approval_requests SET host_instance = NULL, detached_at = now()
             WHERE id = ANY($1) AND state = 'pending' AND host_instance = $2
             RETURNING id
         )
         SELECT pg_notify($3, id) FROM away",
    )
    .bind(ids)
    .bind(instance)
    .bind(CHANNEL)
    .execute(pool)
    .await?;
    Ok(())
}

/// Finds the newest request `host` submitted as `host_request_id` with
/// this identity and point, pending or decided and within its deadline,
/// and attaches it to `instance`, in one transaction.
pub(crate) async fn reattach(
    pool: &PgPool,
    instance: &str,
    host: &str,
    host_request_id: &str,
    context_identity: Option<&str>,
    point: InterceptionPoint,
) -> Result<Option<ReattachFound>, Error> {
    let mut tx = pool.begin().await?;
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
    .bind(instance)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((id,)) = found else {
        tx.rollback().await?;
        return Ok(None);
    };
    announce(&mut *tx, &id).await?;
    let asked = Instant::now();
    let row = sqlx::query(&format!("{SELECT_REQUEST} WHERE id = $1"))
        .bind(&id)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(match read_state(&row, asked)? {
        StoredState::Pending { request, .. } => Some(ReattachFound::Pending(request)),
        StoredState::Decided { id, resolution, .. } => Some(ReattachFound::Decided {
            id,
            resolution,
            remaining: remaining(&row, asked)?,
        }),
        StoredState::Closed { .. } => None,
    })
}
