//! The change feed, over LISTEN/NOTIFY.
//!
//! Every write that changes a request ends with `pg_notify` on
//! [`CHANNEL`] (carrying the request's queue id) in the same statement or
//! transaction, so a change is announced exactly when it commits, to
//! every instance (the one that made it included). Each instance
//! `LISTEN`s on one dedicated connection and turns notifications into
//! [`StoreChange`]s; when that connection is lost, sqlx reconnects it and
//! the instance re-reads the whole pending set ([`StoreChange::Resync`]),
//! since notifications sent meanwhile are lost.

use std::time::Duration;

use hookwire_approvals::StoreChange;
use sqlx::Postgres;
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use crate::error::Error;

/// The `NOTIFY` channel every instance listens on; payload: a queue id.
pub const CHANNEL: &str = "hookwire_approvals";

/// Capacity of the change feed handed to the queue.
const CHANGE_CAPACITY: usize = 4096;

/// Starts listening on `pool`'s database: the feed, and the task that
/// fills it. Listening before it returns, so that a queue subscribing and
/// then reading the pending set misses nothing.
pub(crate) async fn listen(
    pool: &PgPool,
) -> Result<(broadcast::Sender<StoreChange>, AbortHandle), Error> {
    let (changes, _) = broadcast::channel(CHANGE_CAPACITY);
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    let task = tokio::spawn(forward(listener, changes.clone())).abort_handle();
    Ok((changes, task))
}

/// Forwards notifications to the change feed; a lost connection (sqlx
/// reconnects it) means changes were missed: resync.
async fn forward(mut listener: PgListener, changes: broadcast::Sender<StoreChange>) {
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

/// Announces a change of request `id`, within `executor`'s transaction
/// (for the statements that cannot announce it themselves).
pub(crate) async fn announce(
    executor: impl sqlx::Executor<'_, Database = Postgres>,
    id: &str,
) -> Result<(), Error> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(id)
        .execute(executor)
        .await?;
    Ok(())
}
