//! When a long-running command stops: on Ctrl-C (`SIGINT`) or `SIGTERM`,
//! the signal a kubelet, `podman stop` and systemd send first on a rolling
//! restart. Without the `SIGTERM` watch a command running as a container's
//! process 1 would ignore it and be killed at the end of the grace period,
//! without draining. (`approvals serve` also reloads on `SIGHUP`, in its
//! own loop.)

use tokio::signal::unix::{SignalKind, signal};

/// Resolves on the first `SIGINT` or `SIGTERM`. Where `SIGTERM` cannot be
/// watched it says so once and waits for `SIGINT` alone.
pub(crate) async fn requested() {
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(error) => {
            errln!("cannot watch SIGTERM ({error}): stop with Ctrl-C (SIGINT)");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
