//! How the loop learns it must stop: SIGTERM (the kubelet stopping the pod) and SIGINT (Ctrl-C) cancel the
//! token every part of the process watches, so the loop ends after the sync in progress and the servers
//! close after it. Here, beside the loop it stops, rather than in each command that runs one.

use tokio_util::sync::CancellationToken;
use tracing::info;

/// Cancels `shutdown` on the first SIGTERM or SIGINT, from a task of its own.
pub fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        wait_for_signal().await;
        info!("received a termination signal; stopping after the sync in progress");
        shutdown.cancel();
    });
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops extdns");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
