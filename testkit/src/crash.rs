//! A runtime a test can kill like a crash: what runs on it (a server, its
//! streams, its database listener and leases) stops at once, without any
//! of its shutdown paths running.

use std::future::Future;

/// A Tokio runtime of its own for one instance under test.
pub struct CrashableRuntime {
    runtime: tokio::runtime::Runtime,
}

impl CrashableRuntime {
    /// A one-worker runtime with I/O and timers.
    pub fn new() -> Self {
        Self {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime for the instance under test"),
        }
    }

    /// Runs `f` on this runtime (what it spawns stays there) and awaits
    /// its output from the caller's runtime.
    pub async fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        self.runtime.spawn(f).await.expect("the instance task")
    }

    /// Drops every task of the runtime at once, as a crash would.
    pub fn kill(self) {
        self.runtime.shutdown_background();
    }
}

impl Default for CrashableRuntime {
    fn default() -> Self {
        Self::new()
    }
}
