//! hookwire-approvals-postgres: the approval queue shared by several
//! `hookwire approvals serve` instances through one PostgreSQL database.
//!
//! [`PostgresStore`] implements `hookwire_approvals::ApprovalStore`;
//! an instance runs its queue over it with
//! `ApprovalQueue::shared(Arc::new(store))`, or in one call with
//! [`shared_queue`]. The instances then behave as one service:
//!
//! - **One pending set.** A request a host submits on any instance is
//!   written to `approval_requests` and announced with `NOTIFY` on
//!   [`CHANNEL`] in the same statement; every instance `LISTEN`s and adds
//!   it to the set its approvers see. Pushed, never polled.
//! - **First decision wins.** A decision is one transaction:
//!   `UPDATE … SET state = 'decided' WHERE id = $1 AND state = 'pending'
//!   AND deadline > now()`, the audit row and the `NOTIFY`. The row lock
//!   makes a second, concurrent decision wait and then find the request no
//!   longer pending: it is refused (`already_resolved`) and audited as
//!   such. The instance holding the host's stream delivers the winning
//!   decision when the notification reaches it (or at once, when it took
//!   the decision itself).
//! - **Withdrawal everywhere.** When a host's stream ends on a live
//!   instance, its pending requests are closed `host_gone` in the database
//!   and disappear from every instance's approvers; cancellations,
//!   failures and expiries travel the same way.
//! - **Instances die; hosts come back.** An instance holds a lease
//!   (`approval_instances.heartbeat`, renewed every third of
//!   [`PostgresOptions::lease`]). A host whose instance died reconnects to
//!   any instance and re-attaches each pending request by its own request
//!   id (and the request's identity): the request keeps its queue id and
//!   its original deadline, measured by the database's clock. A decision
//!   taken while the host was away is delivered on re-attach.
//! - **What is owed to a host that never comes back.** Nothing is kept
//!   for it beyond the request's deadline and the re-attach grace: its
//!   requests stay pending and decidable until the grace
//!   ([`PostgresOptions::reattach_grace`]) has passed since its instance's
//!   lease ran out (or since its link was detached), then every instance
//!   sees them closed `host_gone`; a deadline that comes first closes them
//!   `expired`. A restarted instance (same id or not) adopts nothing: at
//!   start it releases the requests its previous life held, which then
//!   wait out the grace like any other.
//! - **Audit.** Every decision attempt — who (the verified approver and
//!   how it was verified), when, which request (host, host request id,
//!   context identity, point, session, tool, reason), which outcome
//!   (including the edited arguments), on which instance, and whether it
//!   counted — is a row of `approval_decisions`, read back newest first by
//!   `ApprovalQueue::history`.
//! - **Schema.** Versioned migrations embedded in the binary
//!   ([`migrate`], [`SCHEMA_VERSION`]), applied under an advisory lock at
//!   connect; applying them again changes nothing.
//!
//! The database URL's password never reaches a log or an error message
//! ([`redact_url`]).
//!
//! Its parts: `store` ([`PostgresStore`]: the connection and the request
//! and decision statements), `lease` (leases, the store's housekeeping,
//! re-attach), `notify` (the change feed over LISTEN/NOTIFY), `rows`
//! (reading requests back), `audit` (the decision audit log), `schema`
//! (the migrations). `hookwire_approvals::store::contract` checks it
//! against the rules every store keeps (`tests/approvals_postgres/store_contract.rs`).
//!
//! ```no_run
//! # async fn run() -> Result<(), hookwire_approvals_postgres::Error> {
//! use hookwire_approvals::ApprovalServer;
//!
//! let queue = hookwire_approvals_postgres::shared_queue(
//!     "postgres://hookwire@127.0.0.1:5432/approvals",
//!     "approvals-1",
//! )
//! .await?;
//! # let _ = queue;
//! # Ok(())
//! # }
//! ```

mod audit;
mod error;
mod lease;
mod notify;
mod redact;
mod rows;
mod schema;
mod store;

use std::sync::Arc;

use hookwire_approvals::ApprovalQueue;

pub use error::Error;
pub use notify::CHANNEL;
pub use redact::redact_url;
pub use schema::{SCHEMA_VERSION, migrate};
pub use store::{DEFAULT_LEASE, MAX_INSTANCE_ID, PostgresOptions, PostgresStore};

/// Connects to `url` as instance `instance_id` ([`PostgresStore::connect`])
/// and runs a queue over it: what `hookwire approvals serve
/// --database-url` does.
pub async fn shared_queue(url: &str, instance_id: &str) -> Result<ApprovalQueue, Error> {
    shared_queue_with(url, instance_id, PostgresOptions::default()).await
}

/// [`shared_queue`] with `options`.
pub async fn shared_queue_with(
    url: &str,
    instance_id: &str,
    options: PostgresOptions,
) -> Result<ApprovalQueue, Error> {
    let store = PostgresStore::connect_with(url, instance_id, options).await?;
    ApprovalQueue::shared(Arc::new(store))
        .await
        .map_err(|e| Error::Queue(Box::new(e)))
}

/// An instance id for a process that was given none: the host's name and
/// the process id (`HOSTNAME`, else `/etc/hostname`, else `approvals`),
/// cut to [`MAX_INSTANCE_ID`]. A restarted process gets a new id; its old
/// one's requests are released when its lease runs out.
pub fn default_instance_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "approvals".to_owned());
    let id = format!("{host}-{}", std::process::id());
    id.chars().take(MAX_INSTANCE_ID).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bad_url_is_refused_without_echoing_its_password() {
        let e = PostgresStore::connect("postgres://ann:hunter2@db:notaport/app", "i-1")
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidUrl { .. }), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[tokio::test]
    async fn an_unreachable_database_is_reported_without_its_password() {
        // A port nothing listens on: bind one and close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let url = format!("postgres://ann:hunter2@127.0.0.1:{port}/app");
        let options = PostgresOptions {
            acquire_timeout: std::time::Duration::from_secs(2),
            ..PostgresOptions::default()
        };
        let e = PostgresStore::connect_with(&url, "i-1", options)
            .await
            .unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::Connect { .. }), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("ann:***@127.0.0.1"), "{text}");
    }

    #[test]
    fn the_default_instance_id_names_the_process() {
        let id = default_instance_id();
        assert!(id.ends_with(&format!("-{}", std::process::id())), "{id}");
        assert!(!id.is_empty() && id.chars().count() <= MAX_INSTANCE_ID);
    }

    #[tokio::test]
    async fn instance_ids_are_bounded() {
        let long = "i".repeat(MAX_INSTANCE_ID + 1);
        for id in ["", long.as_str()] {
            let e = PostgresStore::connect("postgres://ann@127.0.0.1:1/app", id)
                .await
                .unwrap_err();
            assert!(matches!(e, Error::InstanceId { .. }), "{e}");
        }
    }
}
