//! The versioned schema: migrations embedded in the binary and applied by
//! sqlx's migrator, which records each applied version (and its checksum)
//! in `_sqlx_migrations` and holds an advisory lock while it runs, so that
//! instances starting together apply each version once and a database
//! already at the latest version is left unchanged.

use std::borrow::Cow;

use sqlx::PgPool;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

use crate::error::Error;

/// Every schema version, oldest first: (version, description, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "approval queue",
        include_str!("../migrations/0001_approval_queue.sql"),
    ),
    (
        2,
        "decision notes",
        include_str!("../migrations/0002_decision_notes.sql"),
    ),
];

/// The latest schema version this crate writes.
pub const SCHEMA_VERSION: i64 = 2;

/// What resolving the embedded migrations yields (sqlx's `BoxFuture`).
type Resolved<'s> = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<Vec<Migration>, sqlx::error::BoxDynError>>
            + Send
            + 's,
    >,
>;

/// The embedded migrations, as a source for sqlx's migrator.
#[derive(Debug, Clone, Copy)]
struct Embedded;

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(self) -> Resolved<'s> {
        Box::pin(async move {
            Ok(MIGRATIONS
                .iter()
                .map(|(version, description, sql)| {
                    Migration::new(
                        *version,
                        Cow::Borrowed(*description),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// Brings the database's schema to [`SCHEMA_VERSION`]; idempotent.
pub async fn migrate(pool: &PgPool) -> Result<(), Error> {
    let migrator = Migrator::new(Embedded).await?;
    migrator.run(pool).await?;
    Ok(())
}
