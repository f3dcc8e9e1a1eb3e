//! `PostgresStore` keeps the contract every approval store keeps
//! (`hookwire_approvals::store::contract`, which `MemoryStore`'s tests run
//! too), on a real PostgreSQL: a throwaway cluster, a fresh database for
//! each check.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hookwire_approvals::ApprovalStore;
use hookwire_approvals::store::contract;
use hookwire_approvals_postgres::{PostgresOptions, PostgresStore};
use hookwire_testkit::postgres::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_keeps_the_store_contract() {
    let pg = PgCluster::start().unwrap_or_else(|e| panic!("cannot start PostgreSQL: {e}"));
    let databases = AtomicUsize::new(0);
    contract::check(|settings: contract::Settings| {
        let n = databases.fetch_add(1, Ordering::Relaxed);
        let url = pg
            .create_database(&format!("contract{n}"))
            .expect("a fresh database");
        async move {
            let options = PostgresOptions {
                // A short lease: the store's housekeeping runs every 200 ms.
                lease: Duration::from_millis(600),
                reattach_grace: settings.reattach_grace,
                ..PostgresOptions::default()
            };
            let store = PostgresStore::connect_with(&url, &settings.instance, options)
                .await
                .unwrap_or_else(|e| panic!("store on {url}: {e}"));
            Arc::new(store) as Arc<dyn ApprovalStore>
        }
    })
    .await;
}
