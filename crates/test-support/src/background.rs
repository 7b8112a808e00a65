//! A server on its own thread and runtime, so that async tests and tests that run a child process can both
//! use it, told to stop and joined when its handle drops: the fakes' skeleton and the TLS proxy run this way.

use std::future::Future;

use tokio::sync::oneshot;

/// The handle of a server running in the background; dropping it stops the server and waits for it.
#[derive(Debug)]
pub(crate) struct Background {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Runs the future `serve` makes on a new thread, on `runtime`; `serve` is handed the signal to stop
    /// (which resolves when the handle drops) and its future should end soon after.
    pub(crate) fn run<F, Fut>(runtime: tokio::runtime::Runtime, serve: F) -> Background
    where
        F: FnOnce(oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || runtime.block_on(serve(stopped)));
        Background {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn dropping_the_handle_stops_the_server_and_waits_for_it() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let ended = Arc::new(AtomicBool::new(false));
        let seen = ended.clone();
        let server = Background::run(runtime, move |stop| async move {
            let _ = stop.await;
            seen.store(true, Ordering::SeqCst);
        });
        assert!(!ended.load(Ordering::SeqCst), "runs until told to stop");
        drop(server);
        assert!(ended.load(Ordering::SeqCst), "the drop returned after the server ended");
    }
}
