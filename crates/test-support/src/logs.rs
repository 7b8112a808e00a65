//! What the code under test logged, captured for a test to assert on: a warning that must be given (or
//! given once), a body that must never be logged. One capture for every suite, rather than a writer
//! copied into each.

use std::sync::{Arc, Mutex};

/// Log lines written while a [`Logs::capture`] guard lives, at `level` and above. In a single-threaded
/// test runtime the tasks the test spawns log through the same thread-local subscriber.
#[derive(Clone)]
pub struct Logs {
    lines: Arc<Mutex<Vec<u8>>>,
    level: tracing::Level,
}

impl Default for Logs {
    /// From INFO up, as a subscriber logs by default (a dependency's DEBUG and TRACE lines, request
    /// bodies among them, are no part of what the code under test says).
    fn default() -> Self {
        Logs::at(tracing::Level::INFO)
    }
}

impl Logs {
    /// Logs at `level` and above.
    pub fn at(level: tracing::Level) -> Logs {
        Logs {
            lines: Arc::default(),
            level,
        }
    }

    /// Captures this thread's logs until the guard drops.
    pub fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(self.level)
            .with_writer(self.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&lines).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// Runs `f`, returning what it returned and everything it logged at WARN and above.
pub fn warnings<T>(f: impl FnOnce() -> T) -> (T, String) {
    let logs = Logs::at(tracing::Level::WARN);
    let out = {
        let _guard = logs.capture();
        f()
    };
    (out, logs.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_captured_and_lower_levels_are_not() {
        let ((), text) = warnings(|| {
            tracing::info!("an info line");
            tracing::warn!(name = "x", "a warning line");
        });
        assert!(text.contains("a warning line"), "{text}");
        assert!(!text.contains("an info line"), "{text}");
    }
}
